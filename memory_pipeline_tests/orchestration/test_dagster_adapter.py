"""Proves: the one piece of Dagster's private API the pipeline relies on still works as relied on.

``dagster_adapter`` imports ``AssetCheckEvaluationTargetMaterializationData`` from a private
module because ``dagster`` does not export it. These tests fail loudly when a release moves it,
changes its fields, starts exporting it (then the adapter should use the public name), or stops
counting an evaluation that targets a partition's latest materialization as that partition's
current check status.
"""

from __future__ import annotations

import dagster as dg

from memory_pipeline.orchestration.dagster_adapter import (
    AssetCheckEvaluationTargetMaterializationData,
    latest_materialization_targets,
)

PARTS = dg.StaticPartitionsDefinition(["x", "y"])


def test_the_target_class_is_still_private_and_has_the_fields_used():
    assert not hasattr(dg, "AssetCheckEvaluationTargetMaterializationData"), "exported now: use dg.* in dagster_adapter"
    target = AssetCheckEvaluationTargetMaterializationData(run_id="r", storage_id=7, timestamp=1.5)
    assert (target.run_id, target.storage_id, target.timestamp) == ("r", 7, 1.5)


def test_an_evaluation_targeting_the_latest_materialization_is_current(instance):
    @dg.asset(partitions_def=PARTS, check_specs=[dg.AssetCheckSpec("ok", asset="marked", partitions_def=PARTS)])
    def marked():
        yield dg.MaterializeResult(check_results=[dg.AssetCheckResult(check_name="ok", passed=True)])

    for key in ("x", "y", "x"):
        assert dg.materialize([marked], instance=instance, partition_key=key).success
    targets = latest_materialization_targets(instance, marked.key, ["x", "y"])
    latest = {
        key: instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=marked.key, asset_partitions=[key]), limit=1).records[0]
        for key in ("x", "y")
    }
    assert {k: (t.run_id, t.storage_id) for k, t in targets.items()} == {k: (r.run_id, r.storage_id) for k, r in latest.items()}

    evaluation = dg.AssetCheckEvaluation(
        asset_key=marked.key, check_name="ok", passed=False, partition="y", target_materialization_data=targets["y"]
    )
    instance.report_runless_asset_event(evaluation)
    infos = {
        i.partition_key: (i.latest_execution_status.value, i.is_current)
        for i in instance.event_log_storage.get_asset_check_partition_info([dg.AssetCheckKey(marked.key, "ok")])
    }
    assert infos == {"x": ("SUCCEEDED", True), "y": ("FAILED", True)}
