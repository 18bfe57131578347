"""Proves: the two pieces of Dagster's private API the pipeline relies on still work as relied on.

``dagster_adapter`` imports ``AssetCheckEvaluationTargetMaterializationData`` from a private
module because ``dagster`` does not export it, and adds per-partition figures to the step's
private metadata accumulator because the public call costs 20-29 ms a key on a long range. These
tests fail loudly when a release moves or changes either, starts exporting the class (then the
adapter should use the public name), or stops counting an evaluation that targets a partition's
latest materialization as that partition's current check status.
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


def test_partition_figures_land_as_the_public_call_puts_them(instance):
    """The fast path writes the accumulator ``context.add_asset_metadata`` fills; if a release moves
    it, the adapter falls back to the public call and this test says so."""
    from memory_pipeline.orchestration.dagster_adapter import add_partition_metadata
    from memory_pipeline.orchestration.runs import range_tags

    used = []

    @dg.asset(partitions_def=PARTS, backfill_policy=dg.BackfillPolicy.single_run())
    def figured(context) -> None:
        step = context.op_execution_context._step_execution_context
        used.append(hasattr(step, "_metadata_accumulator"))
        for key in context.partition_keys:
            add_partition_metadata(context, key, {"rows": ord(key)})

    assert dg.materialize([figured], instance=instance, tags=range_tags("x", "y")).success
    assert used == [True], "Dagster moved the metadata accumulator: dagster_adapter uses the slow public call"
    latest = {
        key: instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=figured.key, asset_partitions=[key]), limit=1)
        .records[0].asset_materialization.metadata["rows"].value
        for key in ("x", "y")
    }
    assert latest == {"x": ord("x"), "y": ord("y")}
