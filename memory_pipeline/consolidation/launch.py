"""Launching consolidation and dreaming runs from Python or the CLI (the sensors' work, on demand)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg

from memory_pipeline.consolidation.dreaming import THRESHOLD
from memory_pipeline.consolidation.sensors import ConsolidationRun, plan_consolidation, plan_dreaming, plan_runs
from memory_pipeline.consolidation.store import ConsolidationStore
from memory_pipeline.orchestration.partitions import SESSION_TENANTS_PARTITION
from memory_pipeline.orchestration.run_workers import worker_tags
from memory_pipeline.orchestration.runs import range_tags, register_tenants


def completed_partitions(root: str | Path, idle_minutes: int, tenants: Sequence[str] | None = None) -> list[tuple[str, str]]:
    """Every (day, tenant) holding a completed session, as the sensor would request them."""
    due, _, _ = plan_consolidation(Path(root).resolve(), {}, datetime.now(UTC), timedelta(minutes=idle_minutes), horizon=None)
    return sorted(key for key in due if tenants is None or key[1] in tenants)


def run_consolidation(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    partitions: Sequence[tuple[str, str]],
    run_config: dict | None = None,
    held: Sequence[tuple[str, str]] = (),
    on_run: Callable[[ConsolidationRun], None] | None = None,
) -> list[dg.ExecuteInProcessResult]:
    """One consolidation run per tenant over its (day, tenant) ``partitions``, from its first day
    to its last, as the sensor requests them: the models load and supersession runs once per
    tenant, not once per day (each day of the range without a session costs Dagster's planned
    and done materializations of it instead, two events per asset). ``held``: other days holding
    sessions, which a range does not cover (they split it). ``on_run`` is told of each run
    before it starts."""
    runs = plan_runs(partitions, held)
    register_tenants(instance, sorted({run.tenant for run in runs}), SESSION_TENANTS_PARTITION)
    job = defs.resolve_job_def("consolidation_job")
    results = []
    for run in runs:
        if on_run:
            on_run(run)
        tags = {**(range_tags(*run.partition_range) if run.partition_range else {}), **worker_tags()}
        results.append(job.execute_in_process(
            instance=instance, partition_key=run.partition_key, tags=tags, run_config=run_config, raise_on_error=True
        ))
    return results


def tenants_to_dream(lancedb_uri: str, dim: int, threshold: int = THRESHOLD) -> dict[str, int]:
    counts = ConsolidationStore(lancedb_uri, dim).unpromoted_counts()
    return {tenant: n for tenant, n in sorted(counts.items()) if n >= threshold}


def run_dreaming(
    defs: dg.Definitions, instance: dg.DagsterInstance, tenants: Sequence[str], run_config: dict | None = None
) -> list[dg.ExecuteInProcessResult]:
    register_tenants(instance, list(tenants), SESSION_TENANTS_PARTITION)
    job = defs.resolve_job_def("dreaming_job")
    return [
        job.execute_in_process(
            instance=instance, partition_key=t, tags=worker_tags(), run_config=run_config, raise_on_error=True
        )
        for t in tenants
    ]


def last_dreams(instance: dg.DagsterInstance, tenants: Sequence[str]) -> dict[str, float]:
    """When each tenant's latest dreaming run was made (a timestamp), from the instance's runs:
    the debounce the sensor keeps in its cursor, for runs a command launches."""
    out = {}
    for tenant in tenants:
        records = instance.get_run_records(
            dg.RunsFilter(job_name="dreaming_job", tags={"dagster/partition": tenant}), limit=1
        )
        if records:
            out[tenant] = records[0].create_timestamp.timestamp()
    return out


def plan_dreams(
    instance: dg.DagsterInstance, lancedb_uri: str, dim: int, tenants: Sequence[str] | None, now: datetime,
    threshold: int = THRESHOLD,
) -> tuple[list[str], dict[str, str]]:
    """(tenants to dream now, why each other one waits), by the sensor's rules: at least
    ``threshold`` unpromoted episodes, and no dreaming run of the tenant in the last 10 minutes.
    ``tenants``: only these (None: every tenant with unpromoted episodes)."""
    counts = ConsolidationStore(lancedb_uri, dim).unpromoted_counts()
    asked = sorted(counts) if tenants is None else list(tenants)
    due, _, waiting = plan_dreaming({t: counts.get(t, 0) for t in asked}, last_dreams(instance, asked), now, threshold)
    return due, waiting
