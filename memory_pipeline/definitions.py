"""The one Dagster ``Definitions`` of memory_pipeline: the source assets and each slice's defs,
merged; every asset carries a reference to the code that defines it (shown in the UI): a link to
the repository when ``MEMORY_PIPELINE_CODE_URL`` names it, else the local file."""

from pathlib import Path

import dagster as dg

from memory_pipeline.activation import defs as activation
from memory_pipeline.config import get_settings
from memory_pipeline.consolidation import defs as consolidation
from memory_pipeline.l0 import defs as l0
from memory_pipeline.memories import defs as memories
from memory_pipeline.orchestration.resources import default_executor, default_resources
from memory_pipeline.orchestration.sources import SOURCE_SPECS


def with_code_references(assets: list) -> list:
    """Each asset with the file and line defining it, linked to ``code_url`` when that is set."""
    referenced = dg.with_source_code_references(assets)
    settings = get_settings()
    if not settings.code_url:
        return referenced
    return dg.link_code_references_to_git(
        referenced, git_url=settings.code_url, git_branch=settings.code_branch,
        file_path_mapping=dg.AnchorBasedFilePathMapping(
            local_file_anchor=Path(__file__), file_anchor_path_in_repository="memory_pipeline/definitions.py"
        ),
    )


defs = dg.Definitions(
    assets=with_code_references([*SOURCE_SPECS, *l0.ASSETS, *consolidation.ASSETS, *memories.ASSETS, *activation.ASSETS]),
    jobs=[*l0.JOBS, *consolidation.JOBS, *memories.JOBS, *activation.JOBS],
    sensors=[*l0.SENSORS, *consolidation.SENSORS, *memories.SENSORS, *activation.SENSORS],
    schedules=[*l0.SCHEDULES, *consolidation.SCHEDULES, *memories.SCHEDULES, *activation.SCHEDULES],
    resources=default_resources(),
    executor=default_executor(),
)


def job(name: str) -> dg.JobDefinition:
    """One job of ``defs``, by name: what a worker process rebuilds a run's job from
    (``dg.build_reconstructable_job("memory_pipeline.definitions", "job", (name,))``)."""
    return defs.resolve_job_def(name)
