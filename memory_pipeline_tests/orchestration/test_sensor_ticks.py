"""The part every sensor shares: reading and writing the JSON cursor, tagging run requests and
building the tick's ``SensorResult``.

Proves: cursors in the shapes the three sensors stored before read back and write back to the
same string (an instance upgraded in place keeps its sensors' state); run requests carry the
trigger and count tags the UI filters on; only tenants the instance does not know are
registered; a skip reason is given only when nothing is requested.
"""

from __future__ import annotations

import dagster as dg

from memory_pipeline.orchestration.partitions import TENANTS_PARTITION
from memory_pipeline.orchestration.sensor_ticks import read_cursor, tagged_run_request, tick_result, write_cursor

STORED_CURSORS = {
    "workspace_sensor": '{"bot~_global": "3f2a9c", "other~_global": "gone"}',
    "consolidation_sensor": '{"sessions": {"bot/sessions/ann/live.jsonl": ["120:1763640000.0", "open", '
    '"2026-11-20T11:50:00+00:00"], "bot/sessions/ann/s1.jsonl": ["80:1763630000.0", "done", "2026-11-20"]}}',
    "dreaming_sensor": '{"support-bot~alice": 1763640000.0}',
}


def context(instance, cursor=None) -> dg.SensorEvaluationContext:
    return dg.build_sensor_context(instance=instance, cursor=cursor)


def test_first_tick_reads_an_empty_cursor(instance):
    assert read_cursor(context(instance)) == {}
    assert read_cursor(context(instance, "")) == {}


def test_stored_cursors_read_and_write_back_unchanged(instance):
    for stored in STORED_CURSORS.values():
        assert write_cursor(read_cursor(context(instance, stored))) == stored
    assert read_cursor(context(instance, STORED_CURSORS["dreaming_sensor"])) == {"support-bot~alice": 1763640000.0}


def test_cursor_is_written_with_sorted_keys():
    assert write_cursor({"b": 1, "a": {"d": 2, "c": 3}}) == '{"a": {"c": 3, "d": 2}, "b": 1}'


def test_run_request_tags():
    request = tagged_run_request("bot~ann", "dream:bot~ann:1763640000", trigger="dreaming_sensor", unpromoted=7)
    assert (request.partition_key, request.run_key) == ("bot~ann", "dream:bot~ann:1763640000")
    assert request.tags == {"memory_pipeline/trigger": "dreaming_sensor", "memory_pipeline/unpromoted": "7"}
    plain = tagged_run_request("bot~ann", "l0:bot~ann:3f2a9c", trigger="workspace_sensor")
    assert plain.tags == {"memory_pipeline/trigger": "workspace_sensor"}


def test_result_registers_only_unknown_tenants(instance):
    instance.add_dynamic_partitions(TENANTS_PARTITION, ["bot~ann"])
    requests = [tagged_run_request(t, f"l0:{t}:1", trigger="workspace_sensor") for t in ("bot~ann", "bot~zoe", "bot~bob")]
    result = tick_result(
        context(instance), requests, {"z": 1, "a": 2}, skip_reason="unused", tenants=["bot~zoe", "bot~ann", "bot~bob"]
    )
    assert result.run_requests == requests
    assert [r.partition_keys for r in result.dynamic_partitions_requests] == [["bot~bob", "bot~zoe"]]
    assert result.dynamic_partitions_requests[0].partitions_def_name == TENANTS_PARTITION
    assert result.cursor == '{"a": 2, "z": 1}'
    assert result.skip_reason is None


def test_result_without_requests_skips_and_registers_nothing_known(instance):
    instance.add_dynamic_partitions(TENANTS_PARTITION, ["bot~ann"])
    result = tick_result(context(instance), [], {}, skip_reason="no change in 3 files", tenants={"bot~ann"})
    assert result.run_requests == [] and result.dynamic_partitions_requests == []
    assert result.cursor == "{}"
    assert result.skip_reason.skip_message == "no change in 3 files"
    assert tick_result(context(instance), [], {}, skip_reason="nothing").dynamic_partitions_requests == []
