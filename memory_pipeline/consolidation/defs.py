"""Everything consolidation adds to the project's one ``Definitions``."""

from memory_pipeline.consolidation.assets import consolidation_assets, consolidation_job, dreaming, dreaming_job
from memory_pipeline.consolidation.schedules import prune_episodes_job, prune_episodes_schedule
from memory_pipeline.consolidation.sensors import consolidation_sensor, dreaming_sensor

ASSETS = [*consolidation_assets, dreaming]
JOBS = [consolidation_job, dreaming_job, prune_episodes_job]
SENSORS = [consolidation_sensor, dreaming_sensor]
SCHEDULES = [prune_episodes_schedule]
