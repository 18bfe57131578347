"""The one Dagster ``Definitions`` of memory_pipeline: the source assets and each slice's defs,
merged; every asset carries a reference to the code that defines it (shown in the UI)."""

import dagster as dg

from memory_pipeline.activation import defs as activation
from memory_pipeline.consolidation import defs as consolidation
from memory_pipeline.l0 import defs as l0
from memory_pipeline.memories import defs as memories
from memory_pipeline.orchestration.resources import default_resources
from memory_pipeline.orchestration.sources import SOURCE_SPECS

defs = dg.Definitions(
    assets=dg.with_source_code_references([*SOURCE_SPECS, *l0.ASSETS, *consolidation.ASSETS, *memories.ASSETS,
                                           *activation.ASSETS]),
    jobs=[*l0.JOBS, *consolidation.JOBS, *memories.JOBS, *activation.JOBS],
    sensors=[*l0.SENSORS, *consolidation.SENSORS, *memories.SENSORS, *activation.SENSORS],
    schedules=[*l0.SCHEDULES, *consolidation.SCHEDULES, *memories.SCHEDULES, *activation.SCHEDULES],
    resources=default_resources(),
    executor=dg.in_process_executor,
)
