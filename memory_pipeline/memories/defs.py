"""Everything typed memories add to the project's one ``Definitions``."""

from memory_pipeline.memories.assets import typed_memory_assets, typed_memories_job
from memory_pipeline.memories.sensors import typed_memories_sensor

ASSETS = [*typed_memory_assets]
JOBS = [typed_memories_job]
SENSORS = [typed_memories_sensor]
SCHEDULES: list = []
