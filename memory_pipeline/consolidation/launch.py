"""Launching consolidation and dreaming runs from Python or the CLI (the sensors' work, on demand)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg

from memory_pipeline.consolidation.dreaming import THRESHOLD
from memory_pipeline.consolidation.partitions import consolidation_key
from memory_pipeline.orchestration.partitions import SESSION_TENANTS_PARTITION
from memory_pipeline.consolidation.sensors import plan_consolidation
from memory_pipeline.consolidation.store import ConsolidationStore
from memory_pipeline.orchestration.runs import register_tenants


def completed_partitions(root: str | Path, idle_minutes: int, tenants: Sequence[str] | None = None) -> list[tuple[str, str]]:
    """Every (day, tenant) holding a completed session, as the sensor would request them."""
    due, _, _ = plan_consolidation(Path(root).resolve(), {}, datetime.now(UTC), timedelta(minutes=idle_minutes), horizon=None)
    return sorted(key for key in due if tenants is None or key[1] in tenants)


def run_consolidation(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    partitions: Sequence[tuple[str, str]],
    run_config: dict | None = None,
) -> list[dg.ExecuteInProcessResult]:
    """One consolidation run per (day, tenant), in day order (the graph's history builds up in order)."""
    register_tenants(instance, sorted({tenant for _, tenant in partitions}), SESSION_TENANTS_PARTITION)
    job = defs.resolve_job_def("consolidation_job")
    return [
        job.execute_in_process(
            instance=instance, partition_key=consolidation_key(day, tenant), run_config=run_config, raise_on_error=True
        )
        for day, tenant in sorted(partitions)
    ]


def tenants_to_dream(lancedb_uri: str, dim: int, threshold: int = THRESHOLD) -> dict[str, int]:
    counts = ConsolidationStore(lancedb_uri, dim).unpromoted_counts()
    return {tenant: n for tenant, n in sorted(counts.items()) if n >= threshold}


def run_dreaming(
    defs: dg.Definitions, instance: dg.DagsterInstance, tenants: Sequence[str], run_config: dict | None = None
) -> list[dg.ExecuteInProcessResult]:
    register_tenants(instance, list(tenants), SESSION_TENANTS_PARTITION)
    job = defs.resolve_job_def("dreaming_job")
    return [
        job.execute_in_process(instance=instance, partition_key=t, run_config=run_config, raise_on_error=True)
        for t in tenants
    ]
