"""What an asset reports at the end of a run: each partition its own figures, the run its own.

A run over several partitions (a backfill runs as one run) would otherwise write the run's totals
on every partition (``typed_memories`` showed ``memories_written 184, tenants 6`` on each of six
tenants) and the per-partition plots would be wrong. Dagster records its own materialization of
every partition of the run when the step's result arrives; each partition the asset reports on
gets its own figures on that materialization, and nothing else: the partition's latest
materialization, the one the UI shows, is its own, and a partition the asset does not report on
carries no figures. What is true of the whole
run (``partitions``, ``seconds``, previews, counts known only per run such as episodes inserted)
is an observation of the asset, one per run. Checks declared per partition get one evaluation
per partition as well.

The figures go on Dagster's materializations (what ``context.add_asset_metadata(..., partition_key=)``
does, through ``dagster_adapter`` for its cost) rather than on materializations of their own,
which would be a second event per partition. Each partition's check evaluation names that partition's materialization as its target
(``dagster_adapter``), so the UI's check status per partition reads Passed or Failed after a
multi-partition run exactly as after a run of one, and a failing tenant fails only its own checks.

A run with one partition (a person's launch from the UI, a sensor's run of one day) reports it
all in its one result. When some
partitions failed, the others are still reported and the step then fails naming the failed ones,
so a single-run backfill neither hides a failure nor loses the work of the tenants that completed.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import dagster as dg
import pyarrow as pa

from memory_pipeline.orchestration.column_docs import describe
from memory_pipeline.orchestration.dagster_adapter import add_partition_metadata, latest_materialization_targets

PARTITIONS_FIGURE = "partitions"  # on the run-wide observation of a run over several partitions


@dataclass
class PartitionReport:
    """What a multi-partition asset hands to ``report_partitions``: the run's partition keys, read
    once (``context.partition_keys`` lists every key of the run's range at each read: about 10 ms
    for a range of 600 keys); per partition, its metadata and its check outcomes
    (check name -> (passed, metadata)); the failed partitions with the reason."""

    partition_keys: list[str]
    metadata: dict[str, dict[str, Any]] = field(default_factory=dict)
    checks: dict[str, dict[str, tuple[bool, dict[str, Any]]]] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)

    def add(self, partition: str, metadata: Mapping[str, Any], checks: Mapping[str, tuple[bool, dict]] | None = None) -> None:
        self.metadata[partition] = dict(metadata)
        for name, outcome in (checks or {}).items():
            self.checks.setdefault(name, {})[partition] = outcome

    def fail(self, partition: str, reason: str) -> None:
        self.failed[partition] = reason


def fail_partition(context: dg.AssetExecutionContext, report: PartitionReport, key: str, what: str, exc: Exception) -> None:
    """Logs ``[key] what: <error>`` and records the partition as failed, so the run goes on with the
    others (one tenant's failure must not stop them) and then fails naming it."""
    context.log.error(f"[{key}] {what}: {type(exc).__name__}: {exc}")
    report.fail(key, f"{type(exc).__name__}: {exc}")


def report_partitions(
    context: dg.AssetExecutionContext,
    report: PartitionReport,
    run_metadata: Mapping[str, Any],
    run_totals: Mapping[str, Any] | None = None,
) -> Iterator[Any]:
    """The events an asset yields for its run (``MaterializeResult`` and check results): see the
    module docstring. ``run_totals``: counts the asset knows only for the whole run (per tenant, not
    per day): the partition's own when the run has one partition, else on the run-wide observation
    beside ``partitions``, never on a partition's materialization."""
    yield from partition_events(context, context.asset_key, report, run_metadata, run_totals)
    raise_failed(report)


def partition_events(
    context: dg.AssetExecutionContext,
    asset_key: dg.AssetKey,
    report: PartitionReport,
    run_metadata: Mapping[str, Any],
    run_totals: Mapping[str, Any] | None = None,
) -> Iterator[Any]:
    """``report_partitions`` for one asset of a step that may materialize several, without failing
    the step: when partitions failed, the others are materialized one by one and the caller then
    calls ``raise_failed`` once, after every asset of the step is reported."""
    keys = [k for k in report.partition_keys if k in report.metadata]
    blocking = {spec.name: spec.blocking for spec in context.assets_def.check_specs if spec.asset_key == asset_key}
    checks = {name: by for name, by in report.checks.items() if name in blocking}
    if len(report.partition_keys) == 1 and keys:
        key = keys[0]
        metadata = {**report.metadata[key], **(run_totals or {}), **run_metadata}
        results = [dg.AssetCheckResult(asset_key=asset_key, check_name=name, passed=by[key][0], metadata=by[key][1])
                   for name, by in checks.items() if key in by]
        yield dg.MaterializeResult(asset_key=asset_key, metadata=metadata, check_results=results)
        return
    if report.failed:
        for key in keys:
            yield dg.AssetMaterialization(asset_key=asset_key, partition=key, metadata=report.metadata[key])
        yield from check_evaluations(context, asset_key, checks, keys, blocking)
        return
    results = list(_run_results(checks, asset_key))
    for key in keys:
        add_partition_metadata(context, key, report.metadata[key], asset_key)
    yield dg.AssetObservation(asset_key=asset_key, metadata={**(run_totals or {}), **run_metadata, PARTITIONS_FIGURE: len(keys)})
    yield dg.MaterializeResult(asset_key=asset_key, check_results=results)
    yield from check_evaluations(context, asset_key, checks, keys, blocking)


def raise_failed(report: PartitionReport) -> None:
    """Fails the step naming the partitions that failed, once their events are yielded: Dagster
    then records no materialization of the step's own for any partition of the run."""
    if report.failed:
        done = [k for k in report.partition_keys if k in report.metadata]
        raise dg.Failure(
            description=f"{len(report.failed)} of {len(report.partition_keys)} partitions failed: "
            + "; ".join(f"{key}: {why}" for key, why in sorted(report.failed.items()))[:2000],
            metadata={"failed_partitions": sorted(report.failed), "completed_partitions": done},
        )


def _run_results(checks: Mapping[str, Mapping[str, tuple[bool, dict]]], asset_key: dg.AssetKey | None = None):
    """Dagster needs one result per declared check for the step; it records no partition in a run
    over several, so the UI's status per partition comes from the evaluations that follow."""
    for name, by in checks.items():
        yield dg.AssetCheckResult(
            asset_key=asset_key, check_name=name, passed=all(passed for passed, _ in by.values()),
            metadata={"failed_partitions": sorted(k for k, (passed, _) in by.items() if not passed)},
        )


def check_evaluations(
    context: dg.AssetExecutionContext | dg.AssetCheckExecutionContext,
    asset_key: dg.AssetKey,
    checks: Mapping[str, Mapping[str, tuple[bool, dict[str, Any]]]],
    keys: list[str],
    blocking: Mapping[str, bool],
) -> Iterator[dg.AssetCheckEvaluation]:
    """One evaluation per check and partition of ``keys`` (``checks``: name -> partition ->
    (passed, metadata)), each targeting the partition's latest materialization, which this run
    has just recorded."""
    evaluated = [key for key in keys if any(key in by for by in checks.values())]
    targets = latest_materialization_targets(context.instance, asset_key, evaluated) if evaluated else {}
    for name, by in checks.items():
        for key in keys:
            if key in by:
                passed, metadata = by[key]
                yield dg.AssetCheckEvaluation(
                    asset_key=asset_key, check_name=name, passed=passed, metadata=metadata,
                    partition=key, blocking=blocking.get(name, False), target_materialization_data=targets.get(key),
                )


OWNERS = ["team:memory-pipeline"]
"""Who answers for every asset of the pipeline (shown in the UI, used to route alerts)."""


def layer_asset(group_name: str, tags: dict[str, str]):
    """The ``dg.asset`` decorator of one layer of the pipeline: a backfill of many partitions runs as
    one run (reported per partition, see above), every asset is owned by OWNERS, and the layer's
    assets share its group and tags. The asset's own arguments pass through.

    An asset with checks is made a subsettable one-asset ``multi_asset``, so its checks can run on
    their own (the UI's "Execute" on a check, a job selecting the checks alone) without materializing
    it again: the function sees no asset selected (``checks_only``) and reports the checks of
    what is stored (``report_checks``). Its inputs must be among its ``deps``. With ``specs`` (a list
    of ``dg.AssetSpec``), one step materializes those assets, each with its own figures
    (``partition_events``), and runs the same way when only some of them are selected."""

    def asset(**kwargs):
        common = {"backfill_policy": dg.BackfillPolicy.single_run(), "group_name": group_name}
        if "specs" in kwargs:  # one step that materializes several assets
            specs = [s.merge_attributes(owners=OWNERS, tags=tags).replace_attributes(partitions_def=kwargs.get("partitions_def"))
                     for s in kwargs.pop("specs")]
            return lambda fn: dg.multi_asset(name=fn.__name__, specs=specs, can_subset=True, **common, **kwargs)(fn)
        if not kwargs.get("check_specs"):
            return dg.asset(**common, owners=OWNERS, tags=tags, **kwargs)

        def decorate(fn):
            options = dict(kwargs)
            spec = dg.AssetSpec(
                fn.__name__, deps=options.pop("deps", None), description=inspect.getdoc(fn),
                metadata=options.pop("metadata", None), kinds=options.pop("kinds", None), owners=OWNERS, tags=tags,
                partitions_def=options.get("partitions_def"),
            )
            return dg.multi_asset(name=fn.__name__, specs=[spec], can_subset=True, **common, **options)(fn)

        return decorate

    return asset


def checks_only(context: dg.AssetExecutionContext) -> bool:
    """Whether this run asked for the asset's checks alone (see ``layer_asset``)."""
    return not context.selected_asset_keys


def report_checks(
    context: dg.AssetExecutionContext, checks: Mapping[str, Mapping[str, tuple[bool, dict[str, Any]]]]
) -> Iterator[Any]:
    """The selected checks of a checks-only run, evaluated on what is stored (``checks``: name ->
    partition -> (passed, metadata)): each partition's evaluation targets its latest
    materialization, as after a run that materialized it."""
    asset_key = next(iter(context.selected_asset_check_keys)).asset_key  # no asset is selected
    selected = {key.name for key in context.selected_asset_check_keys}
    checks = {name: by for name, by in checks.items() if name in selected}
    keys = context.partition_keys
    if len(keys) == 1:
        for name, by in checks.items():
            passed, metadata = by[keys[0]]
            yield dg.AssetCheckResult(asset_key=asset_key, check_name=name, passed=passed, metadata=metadata)
        return
    yield from _run_results(checks, asset_key)
    blocking = {spec.name: spec.blocking for spec in context.assets_def.check_specs}
    yield from check_evaluations(context, asset_key, checks, keys, blocking)


def report_stored_checks(
    context: dg.AssetExecutionContext, name: str, check: Callable[[str], tuple[bool, dict[str, Any]]]
) -> Iterator[Any]:
    """``report_checks`` of an asset with the one check ``name``: ``check(partition_key)`` evaluates
    it on what is stored, for each partition of the run."""
    yield from report_checks(context, {name: {key: check(key) for key in context.partition_keys}})


def md_table(headers: list[str], rows: list[list[Any]], empty: str = "nothing") -> str:
    """A Markdown table for the UI's metadata (``dg.MetadataValue.md``): each cell on one line,
    its pipes escaped, cut at 180 characters; ``empty`` when there is no row."""
    if not rows:
        return empty

    def cell(v: Any) -> str:
        return str(v).replace("|", "\\|").replace("\n", " ")[:180]

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    return "\n".join(lines + ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows])


def column_schema(table: str, schema: pa.Schema) -> dg.TableSchema:
    """A LanceDB table's Arrow schema as the ``dagster/column_schema`` the UI shows on the asset,
    each column with what it means (``column_docs``)."""
    return dg.TableSchema(
        columns=[
            dg.TableColumn(
                f.name, str(f.type), description=describe(table, f.name),
                constraints=dg.TableColumnConstraints(nullable=f.nullable),
            )
            for f in schema
        ]
    )
