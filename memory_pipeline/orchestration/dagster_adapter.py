"""The one place that reaches past Dagster's public API, and why.

Dagster links a check evaluation to the materialization it checked: a partition's check status in
the UI (Checks -> Partitions) counts an evaluation only while it targets that partition's latest
materialization. ``AssetCheckResult`` does the linking itself, but only in a run of one partition;
in a run over several partitions (a single-run backfill) it records no partition at all. The
pipeline therefore yields one public ``dg.AssetCheckEvaluation`` per partition, and the class that
names the target materialization, ``AssetCheckEvaluationTargetMaterializationData``, is not
exported by ``dagster`` (1.13): it is imported here from its private module. Without a target,
every evaluation of a multi-partition run shows as "Missing" beside a passed history.

Per-partition figures: ``context.add_asset_metadata(metadata, partition_key=key)`` is public, but
each call lists every key of the run's range to check that ``key`` is one of them: 20-29 ms a
call on a consolidation range of 330 days (one tenant, 33 keys reported: 0.67-0.97 s, against
2.6 ms for the same figures added here), where consolidating one short session takes about 250 ms.
``add_partition_metadata`` adds the figures to the same
accumulator the public call fills, for a key the caller took from the run's own keys; it uses the
public call when the private accumulator is not where it was.

``memory_pipeline_tests/orchestration/test_dagster_adapter.py`` fails when a release moves or
changes either.
"""

from __future__ import annotations

from collections.abc import Sequence

import dagster as dg
from dagster._core.definitions.asset_checks.asset_check_evaluation import (  # not exported by dagster 1.13
    AssetCheckEvaluationTargetMaterializationData,
)

__all__ = ["add_partition_metadata", "latest_materialization_targets"]


def add_partition_metadata(
    context: dg.AssetExecutionContext, key: str, metadata: dict, asset_key: dg.AssetKey | None = None
) -> None:
    """``context.add_asset_metadata(metadata, partition_key=key, asset_key=asset_key)`` for a ``key``
    of the run, without listing the run's keys again (see the module docstring)."""
    asset_key = asset_key or context.asset_key
    step = getattr(context.op_execution_context, "_step_execution_context", None)
    accumulator = getattr(step, "_metadata_accumulator", None)
    if accumulator is None:
        context.add_asset_metadata(metadata, partition_key=key, asset_key=asset_key)
        return
    step._metadata_accumulator = accumulator.with_additional_asset_metadata(asset_key, key, metadata)


def latest_materialization_targets(
    instance: dg.DagsterInstance, asset_key: dg.AssetKey, partition_keys: Sequence[str]
) -> dict[str, AssetCheckEvaluationTargetMaterializationData]:
    """{partition: its latest materialization, as a check evaluation's target} for the partitions
    that have one. Read newest first, a page at a time, until every partition is found: in a run
    that just materialized them, the first page of ``len(partition_keys)`` records."""
    wanted = set(partition_keys)
    found: dict[str, AssetCheckEvaluationTargetMaterializationData] = {}
    cursor = None
    while wanted - found.keys():
        page = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=asset_key, asset_partitions=sorted(wanted - found.keys())),
            limit=max(len(wanted) - len(found), 1), cursor=cursor,
        )
        for record in page.records:
            if record.partition_key in wanted and record.partition_key not in found:
                found[record.partition_key] = AssetCheckEvaluationTargetMaterializationData(
                    run_id=record.run_id, storage_id=record.storage_id, timestamp=record.timestamp
                )
        if not page.has_more:
            break
        cursor = page.cursor
    return found
