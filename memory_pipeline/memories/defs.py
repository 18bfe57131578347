"""Everything typed memories add to the project's one ``Definitions``."""

from memory_pipeline.memories.assets import graph_assets, graph_ingest_job
from memory_pipeline.memories.sensors import memories_sensor

ASSETS = [*graph_assets]
JOBS = [graph_ingest_job]
SENSORS = [memories_sensor]
SCHEDULES: list = []
