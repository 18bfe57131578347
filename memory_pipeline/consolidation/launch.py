"""Launching consolidation and dreaming runs from Python or the CLI (the sensors' work, on demand)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg

from memory_pipeline.consolidation.assets import scope_config
from memory_pipeline.consolidation.sensors import ConsolidationRun, plan_consolidation, plan_runs
from memory_pipeline.consolidation.store import ConsolidationStore
from memory_pipeline.episodes.dream_rules import THRESHOLD, plan_dreaming
from memory_pipeline.orchestration.instance.run_workers import worker_tags
from memory_pipeline.orchestration.partitions import SESSION_TENANTS_PARTITION
from memory_pipeline.orchestration.runs import range_tags, register_tenants


def completed_tenants(
    root: str | Path, idle_minutes: int, tenants: Sequence[str] | None = None, days: Collection[str] = ()
) -> list[str]:
    """The tenants (of ``tenants``, every one if None) holding a completed session (completed on
    one of ``days``, when given)."""
    due, _, _ = plan_consolidation(Path(root).resolve(), {}, datetime.now(UTC), timedelta(minutes=idle_minutes), horizon=None)
    return sorted({
        tenant for day, tenant in due if (tenants is None or tenant in tenants) and (not days or day in days)
    })


def plan_tenant_runs(instance: dg.DagsterInstance, tenants: Sequence[str]) -> list[ConsolidationRun]:
    """The runs over ``tenants`` once they are registered: one per stretch of neighbours among
    the session-tenant partitions (every tenant of ``consolidate --all``: one run)."""
    register_tenants(instance, sorted(tenants), SESSION_TENANTS_PARTITION)
    return plan_runs(tenants, instance.get_dynamic_partitions(SESSION_TENANTS_PARTITION))


def run_consolidation(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    tenants: Sequence[str],
    scope: dict | None = None,
    run_config: dict | None = None,
    on_run: Callable[[ConsolidationRun], None] | None = None,
) -> list[dg.ExecuteInProcessResult]:
    """Consolidate ``tenants`` in as few runs as their partitions allow (``plan_tenant_runs``), each
    over a range of tenants, so the models load and supersession runs once per tenant and each
    tenant gets its own figures and checks. ``scope``: which sessions (``scope_config``; by
    default those not consolidated yet). ``on_run`` is told of each run before it starts."""
    runs = plan_tenant_runs(instance, tenants)
    job = defs.resolve_job_def("consolidation_job")
    config = {**(run_config or {}), **(scope or scope_config())}
    results = []
    for run in runs:
        if on_run:
            on_run(run)
        tags = {**(range_tags(*run.partition_range) if run.partition_range else {}), **worker_tags()}
        results.append(job.execute_in_process(
            instance=instance, partition_key=run.partition_key, tags=tags, run_config=config, raise_on_error=True
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
    instance: dg.DagsterInstance, counts: dict[str, int], now: datetime, threshold: int = THRESHOLD
) -> tuple[list[str], dict[str, str]]:
    """(tenants to dream now, why each other one waits) of ``counts`` (unpromoted episodes by
    tenant), by the sensor's rules, the last dreaming runs read from the instance."""
    ready = [tenant for tenant, count in counts.items() if count >= threshold]
    due, _, waiting = plan_dreaming(counts, last_dreams(instance, ready), now, threshold)
    return due, waiting
