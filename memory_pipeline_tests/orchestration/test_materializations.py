"""Proves: ``report_partitions`` gives each partition of a run its own truth.

In a run over three partitions each partition is materialized once, with its own figures, the
run's figures are one observation of the asset, and each partitioned check has one evaluation
per partition; a blocking check that fails on one
partition fails the step, so nothing downstream reads it. When a partition fails, the others are
still reported as materialized and the run fails naming the failed one (what a single-run
backfill over tenants needs: one bad tenant neither hides its failure nor loses the others' work).
A count known only for the whole run (episodes inserted over a tenant's days) is on the run-wide
observation of a run over many partitions, never on a partition's materialization, and is the
partition's own in a run of one. Each partition's check status, as the UI reads it (Checks ->
Partitions), is that partition's own evaluation of its latest materialization, after a run of
one partition and after a run of many alike; a failing partition fails only its own.
"""

from __future__ import annotations

import dagster as dg

from memory_pipeline.orchestration.materializations import PARTITIONS_FIGURE, PartitionReport, report_partitions
from memory_pipeline.orchestration.runs import RANGE_END_TAG, RANGE_START_TAG

PARTS = dg.StaticPartitionsDefinition(["a", "b", "c"])
RANGE = {RANGE_START_TAG: "a", RANGE_END_TAG: "c"}


def build(failing_check: str | None = None, failing_partition: str | None = None, run_totals: dict | None = None) -> list:
    @dg.asset(
        partitions_def=PARTS,
        backfill_policy=dg.BackfillPolicy.single_run(),
        check_specs=[dg.AssetCheckSpec("rows_ok", asset="counted", partitions_def=PARTS, blocking=True, description="d")],
    )
    def counted(context):
        report = PartitionReport(context.partition_keys)
        for key in report.partition_keys:
            if key == failing_partition:
                report.fail(key, "its folder could not be read")
                continue
            report.add(key, {"dagster/row_count": ord(key) - 96}, {"rows_ok": (key != failing_check, {"key": key})})
        yield from report_partitions(context, report, {"seconds": 0.1}, run_totals=run_totals)

    @dg.asset(partitions_def=PARTS, deps=[counted])
    def reader() -> None:
        return None

    return [counted, reader]


def latest(instance, key: str) -> dict:
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey("counted"), asset_partitions=[key]), limit=1
    ).records
    return {k: v.value for k, v in records[0].asset_materialization.metadata.items()} if records else {}


def check_status(instance, check: str = "rows_ok") -> dict[str, str]:
    """{partition: status} of a check as the UI's Checks -> Partitions counts it: the latest
    evaluation, when it targets the partition's latest materialization (else the partition is
    "Missing" and left out here)."""
    key = dg.AssetCheckKey(dg.AssetKey("counted"), check)
    return {
        info.partition_key: info.latest_execution_status.value
        for info in instance.event_log_storage.get_asset_check_partition_info([key])
        if info.partition_key is not None and info.is_current
    }


def run_wide(result) -> list[dict]:
    return [
        {k: v.value for k, v in e.asset_observation_data.asset_observation.metadata.items()}
        for e in result.get_asset_observation_events()
    ]


def test_each_partition_has_its_own_figures_and_check(instance):
    result = dg.materialize(build(), instance=instance, tags=RANGE)
    assert result.success
    assert [latest(instance, k) for k in "abc"] == [{"dagster/row_count": n} for n in (1, 2, 3)]
    assert sorted(m.partition for m in result.asset_materializations_for_node("counted")) == ["a", "b", "c"]
    assert run_wide(result) == [{"seconds": 0.1, PARTITIONS_FIGURE: 3}]
    evaluations = {
        (e.asset_check_evaluation_data.partition, e.asset_check_evaluation_data.passed)
        for e in result.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION" and e.asset_check_evaluation_data.partition
    }
    assert evaluations == {("a", True), ("b", True), ("c", True)}
    assert check_status(instance) == {"a": "SUCCEEDED", "b": "SUCCEEDED", "c": "SUCCEEDED"}


def test_check_status_per_partition_survives_runs_of_one_and_of_many(instance):
    assert dg.materialize(build(), instance=instance, partition_key="a").success
    assert check_status(instance) == {"a": "SUCCEEDED"}
    assert dg.materialize(build(), instance=instance, tags=RANGE).success
    assert check_status(instance) == {"a": "SUCCEEDED", "b": "SUCCEEDED", "c": "SUCCEEDED"}
    assert dg.materialize(build(), instance=instance, partition_key="b").success
    assert check_status(instance) == {"a": "SUCCEEDED", "b": "SUCCEEDED", "c": "SUCCEEDED"}


def test_a_failed_blocking_check_stops_the_readers(instance):
    result = dg.materialize(build(failing_check="b"), instance=instance, tags=RANGE, raise_on_error=False)
    assert not result.success
    assert result.asset_materializations_for_node("reader") == []
    assert latest(instance, "b")["dagster/row_count"] == 2  # reported, and flagged by its check
    assert check_status(instance) == {"a": "SUCCEEDED", "b": "FAILED", "c": "SUCCEEDED"}


def test_a_failed_partition_fails_the_run_after_reporting_the_others(instance):
    result = dg.materialize(build(failing_partition="b"), instance=instance, tags=RANGE, raise_on_error=False)
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert "b: its folder could not be read" in failure.step_failure_data.user_failure_data.description
    assert (latest(instance, "a"), latest(instance, "b"), latest(instance, "c")) == (
        {"dagster/row_count": 1}, {}, {"dagster/row_count": 3}
    )
    # b: never materialized; planned in a failed run, which the UI shows as "Execution failed"
    assert check_status(instance) == {"a": "SUCCEEDED", "b": "PLANNED", "c": "SUCCEEDED"}


def test_run_totals_are_on_the_run_wide_result_only(instance):
    from memory_pipeline.orchestration.runs import materialization_metadata

    result = dg.materialize(build(run_totals={"inserted": 7}), instance=instance, tags=RANGE)
    assert run_wide(result) == [{"inserted": 7, "seconds": 0.1, PARTITIONS_FIGURE: 3}]
    assert [latest(instance, k) for k in "abc"] == [{"dagster/row_count": n} for n in (1, 2, 3)]
    assert materialization_metadata(result, timings=False)["counted"] == {"inserted": 7, "dagster/row_count": 6}

    one = dg.materialize(build(run_totals={"inserted": 2}), instance=instance, partition_key="b")
    assert run_wide(one) == []
    assert materialization_metadata(one, timings=False)["counted"] == {"dagster/row_count": 2, "inserted": 2}
    assert latest(instance, "b") == {"dagster/row_count": 2, "inserted": 2, "seconds": 0.1}
