"""Everything consolidation adds to the project's one ``Definitions``."""

from memory_pipeline.consolidation.assets import consolidation_assets, consolidation_job
from memory_pipeline.consolidation.notes_assets import compaction_flush, compaction_flush_job, dreaming, dreaming_job
from memory_pipeline.consolidation.schedules import prune_episodes_job, prune_episodes_schedule
from memory_pipeline.consolidation.sensors import consolidation_sensor, dreaming_sensor, flush_sensor

ASSETS = [*consolidation_assets, dreaming, compaction_flush]
JOBS = [consolidation_job, dreaming_job, compaction_flush_job, prune_episodes_job]
SENSORS = [consolidation_sensor, dreaming_sensor, flush_sensor]
SCHEDULES = [prune_episodes_schedule]
