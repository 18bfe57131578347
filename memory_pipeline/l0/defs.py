"""Everything the L0 index adds to the project's one ``Definitions``."""

from memory_pipeline.l0.assets import l0_assets, l0_index_job
from memory_pipeline.l0.schedules import lancedb_optimize_job, lancedb_optimize_schedule
from memory_pipeline.l0.sensors import workspace_sensor

ASSETS = [*l0_assets]
JOBS = [l0_index_job, lancedb_optimize_job]
SENSORS = [workspace_sensor]
SCHEDULES = [lancedb_optimize_schedule]
