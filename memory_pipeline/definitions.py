"""The one Dagster ``Definitions`` of memory_pipeline."""

import dagster as dg

from memory_pipeline.assets.l0_index import l0_assets, l0_index_job
from memory_pipeline.automation.l0_sensor import workspace_sensor
from memory_pipeline.automation.maintenance import lancedb_optimize_job, lancedb_optimize_schedule
from memory_pipeline.consolidation import defs as consolidation
from memory_pipeline.graph.assets import graph_assets, graph_ingest_job
from memory_pipeline.resources import default_resources

defs = dg.Definitions(
    assets=[*l0_assets, *consolidation.ASSETS, *graph_assets],
    jobs=[l0_index_job, lancedb_optimize_job, *consolidation.JOBS, graph_ingest_job],
    sensors=[workspace_sensor, *consolidation.SENSORS],
    schedules=[lancedb_optimize_schedule, *consolidation.SCHEDULES],
    resources=default_resources(),
    executor=dg.in_process_executor,
)
