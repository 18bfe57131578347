"""Launching the pipeline's jobs from Python or the CLI on a Dagster instance.

Runs go through the real Dagster machinery (instance, event log, IO manager, asset checks): the
same path as a run launched from the UI, only executed in this process.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Sequence
from pathlib import Path

import dagster as dg
import yaml

from memory_pipeline.orchestration.instance.run_workers import worker_tags
from memory_pipeline.orchestration.instance.sqlite import storage_config
from memory_pipeline.orchestration.materializations import PARTITIONS_FIGURE
from memory_pipeline.orchestration.partitions import TENANTS_PARTITION
from memory_pipeline.sources.workspace import scan_workspace
from memory_pipeline.tenancy import Tenant

RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"


def range_tags(first: object, last: object) -> dict[str, str]:
    """The tags of one run over every partition from ``first`` to ``last``, as a single-run
    backfill makes it."""
    return {RANGE_START_TAG: str(first), RANGE_END_TAG: str(last)}


RUN_MONITORING = {"enabled": True, "poll_interval_seconds": 30, "max_resume_run_attempts": 0}
"""Run monitoring of a local home: with ``ProcessRunLauncher`` a killed run is marked failed."""


def instance_config(storage: dict) -> str:
    """A home's ``dagster.yaml``: the ``storage`` section given, the run launcher that can tell a
    killed run (``orchestration.instance.run_workers``), run monitoring, and no telemetry."""
    launcher = {"module": "memory_pipeline.orchestration.instance.run_workers", "class": "ProcessRunLauncher"}
    return yaml.safe_dump(
        {"storage": storage, "run_launcher": launcher, "run_monitoring": RUN_MONITORING, "telemetry": {"enabled": False}},
        sort_keys=False,
    )


def local_instance(home: str | Path | None = None) -> dg.DagsterInstance:
    """The instance in ``DAGSTER_HOME``, defaulting to a project-local ``.dagster_home``. A home
    without a ``dagster.yaml`` gets one: Dagster's SQLite files in the home, written through
    ``LocalSqliteStorage`` (each batch of events at once), and no telemetry."""
    home = Path(home or os.environ.get("DAGSTER_HOME") or ".dagster_home").resolve()
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        config.write_text(instance_config(storage_config(str(home))))
    else:
        _follow_moved_modules(config)
    os.environ["DAGSTER_HOME"] = str(home)
    return dg.DagsterInstance.get()


MOVED_MODULES = {
    f"memory_pipeline.orchestration.{name}": f"memory_pipeline.orchestration.instance.{name}"
    for name in ("sqlite", "postgres", "run_workers")
}
"""Modules a home's ``dagster.yaml`` may name that have moved, with where they are now."""


def _follow_moved_modules(config: Path) -> None:
    """Rewrites a home's ``dagster.yaml`` written before a module it names moved (``MOVED_MODULES``),
    so the instance still loads; nothing else in the file changes."""
    text = config.read_text(encoding="utf-8")
    moved = re.sub(
        r"^(\s*module:\s*)(\S+?)\s*$", lambda m: m.group(1) + MOVED_MODULES.get(m.group(2), m.group(2)), text, flags=re.M
    )
    if moved != text:
        config.write_text(moved, encoding="utf-8")


def register_tenants(instance: dg.DagsterInstance, keys: Sequence[str], partitions: str = TENANTS_PARTITION) -> list[str]:
    """Add partitions (of ``partitions``, the tenants by default) for tenants the instance does
    not know yet; returns the new keys."""
    known = set(instance.get_dynamic_partitions(partitions))
    new = [k for k in keys if k not in known]
    if new:
        instance.add_dynamic_partitions(partitions, new)
    return new


def discover_tenants(root: str | Path) -> list[str]:
    return [t.key for t in scan_workspace(root).tenants]


def run_partitioned_job(
    defs: dg.Definitions, job_name: str, instance: dg.DagsterInstance, keys: Sequence[str], tags: dict | None = None
) -> dg.ExecuteInProcessResult:
    """The last run of ``run_partitioned_jobs`` (the only one when the keys are contiguous)."""
    return run_partitioned_jobs(defs, job_name, instance, keys, tags)[-1]


def run_partitioned_jobs(
    defs: dg.Definitions,
    job_name: str,
    instance: dg.DagsterInstance,
    keys: Sequence[str],
    tags: dict | None = None,
    run_config: dict | None = None,
) -> list[dg.ExecuteInProcessResult]:
    """Run a tenant-partitioned job over ``keys`` as one run (one model load for all of them).

    Keys are registered first; the run covers the contiguous range of partitions from the first
    to the last key, which is every requested key when they were registered together. Otherwise
    each key gets its own run, and every run is returned.
    """
    for key in keys:
        Tenant.from_key(key)  # refuse a crafted key before it reaches the instance
    register_tenants(instance, keys)
    ordered = [k for k in instance.get_dynamic_partitions(TENANTS_PARTITION) if k in set(keys)]
    job = defs.resolve_job_def(job_name)
    all_keys = instance.get_dynamic_partitions(TENANTS_PARTITION)
    first, last = all_keys.index(ordered[0]), all_keys.index(ordered[-1])
    if last - first + 1 == len(ordered):
        run_tags = {**range_tags(ordered[0], ordered[-1]), **worker_tags(), **(tags or {})}
        return [job.execute_in_process(instance=instance, tags=run_tags, run_config=run_config, raise_on_error=True)]
    run_tags = {**worker_tags(), **(tags or {})}
    return [  # not contiguous: one run each
        job.execute_in_process(instance=instance, partition_key=key, tags=run_tags, run_config=run_config, raise_on_error=True)
        for key in ordered
    ]


def materialization_metadata(
    result: dg.ExecuteInProcessResult,
    numeric_only: bool = True,
    *,
    timings: bool = True,
    skip: Collection[str] = (),
) -> dict[str, dict]:
    """Each asset's metadata in a run, once per asset.

    A run over many partitions reports the run-wide figures on an observation of the asset and
    each partition's own on its materialization (see ``orchestration.materializations``): the
    run's figures are then the run-wide entries plus each counted figure summed over the
    partitions. A run of one partition reports it all on its one materialization.

    ``timings=False`` leaves out the ``*seconds`` entries (for a caller that reports its own
    wall-clock time, or adds figures up over runs); ``skip`` names other entries to leave out.
    """
    run_wide: dict[str, dict] = {}
    for event in result.get_asset_observation_events():
        observation = event.asset_observation_data.asset_observation
        values = {key: value.value for key, value in observation.metadata.items()}
        if PARTITIONS_FIGURE in values:
            run_wide[observation.asset_key.to_user_string()] = values
    summed: dict[str, dict] = {}
    for event in result.get_asset_materialization_events():
        mat = event.step_materialization_data.materialization
        asset = mat.asset_key.to_user_string()
        values = {key: value.value for key, value in mat.metadata.items()}
        if asset not in run_wide:
            summed[asset] = values  # a run of one partition: its one materialization
            continue
        totals = summed.setdefault(asset, {})
        for key, value in values.items():
            numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
            totals[key] = totals.get(key, 0) + value if numeric else value
    out: dict[str, dict] = {}
    for asset in {**summed, **run_wide}:  # in the order of their materializations
        merged = {**run_wide.get(asset, {}), **summed.get(asset, {})}
        out[asset] = {
            key: value
            for key, value in merged.items()
            if key not in skip and key != PARTITIONS_FIGURE
            and (timings or not key.endswith("seconds"))
            and (not numeric_only or (isinstance(value, (int, float)) and not isinstance(value, bool)))
        }
    return out
