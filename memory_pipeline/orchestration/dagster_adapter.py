"""The one place that reaches past Dagster's public API, and why.

Dagster links a check evaluation to the materialization it checked: a partition's check status in
the UI (Checks -> Partitions) counts an evaluation only while it targets that partition's latest
materialization. ``AssetCheckResult`` does the linking itself, but only in a run of one partition;
in a run over several partitions (a single-run backfill) it records no partition at all. The
pipeline therefore yields one public ``dg.AssetCheckEvaluation`` per partition, and the class that
names the target materialization, ``AssetCheckEvaluationTargetMaterializationData``, is not
exported by ``dagster`` (1.13): it is imported here from its private module. Without a target,
every evaluation of a multi-partition run shows as "Missing" beside a passed history.

``memory_pipeline_tests/orchestration/test_dagster_adapter.py`` fails when a release moves or
changes it.
"""

from __future__ import annotations

from collections.abc import Sequence

import dagster as dg
from dagster._core.definitions.asset_checks.asset_check_evaluation import (  # not exported by dagster 1.13
    AssetCheckEvaluationTargetMaterializationData,
)

__all__ = ["latest_materialization_targets"]


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
