"""Everything typed memories add to the project's one ``Definitions``."""

from memory_pipeline.memories.assets import graph_assets, graph_ingest_job

ASSETS = [*graph_assets]
JOBS = [graph_ingest_job]
SENSORS: list = []
SCHEDULES: list = []
