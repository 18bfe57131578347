"""Proves: typed memories are automated by the sources' observations. The ``typed_memories_sensor``
requests extraction for each tenant whose Markdown memory or transcripts the workspace sensor
observed changing, once per observation, and nothing when nothing was observed since its last tick.
"""

from __future__ import annotations

import dagster as dg

from memory_pipeline.memories.sensors import typed_memories_sensor


def tick(instance, cursor=None) -> dg.SensorResult:
    return typed_memories_sensor(dg.build_sensor_context(instance=instance, cursor=cursor))


def observe(instance, source: str, tenant: str) -> None:
    instance.report_runless_asset_event(dg.AssetObservation(asset_key=source, partition=tenant, metadata={"files": 1}))


def test_observed_sources_request_their_tenants_once(instance):
    first = tick(instance)
    assert first.run_requests == [] and "no source observed" in first.skip_reason.skip_message

    observe(instance, "markdown_memory", "bot~ann")
    observe(instance, "session_transcripts", "bot~bob")
    observe(instance, "markdown_memory", "bot~bob")
    second = tick(instance, first.cursor)
    assert [r.partition_key for r in second.run_requests] == ["bot~ann", "bot~bob"]
    assert {r.tags["memory_pipeline/trigger"] for r in second.run_requests} == {"typed_memories_sensor"}

    assert tick(instance, second.cursor).run_requests == []
    observe(instance, "markdown_memory", "bot~ann")
    third = tick(instance, second.cursor)
    assert [r.partition_key for r in third.run_requests] == ["bot~ann"]
    assert third.run_requests[0].run_key != second.run_requests[0].run_key
