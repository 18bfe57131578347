"""The consolidation and dreaming sensors over several ticks: completed sessions are requested once
(per day x tenant, new tenants registered), an idle session is requested only once its timeout
passes, a changed transcript is requested again; dreaming needs >= 5 unpromoted episodes and is
debounced for 10 minutes per tenant."""

import json
from datetime import timedelta

import dagster as dg

from memory_pipeline.consolidation import sensors
from memory_pipeline.consolidation.sensors import consolidation_sensor, dreaming_sensor
from memory_pipeline.orchestration.resources import EmbedderResource, LanceDBResource, WorkspaceResource
from memory_pipeline_tests.helpers import write
from memory_pipeline_tests.helpers.consolidation import ALICE, ALICE_DAYS, NOW, add_episodes, iso, jsonl, say, store_for


def tick(sensor, instance, cursor, **resources) -> dg.SensorResult:
    context = dg.build_sensor_context(instance=instance, cursor=cursor, resources=resources)
    return sensor(context)


def partition(request) -> tuple[str, str]:
    key = request.partition_key
    return key.keys_by_dimension["day"], key.keys_by_dimension["tenant"]


def test_completed_sessions_requested_once_per_day_and_tenant(sample_root, instance, monkeypatch):
    monkeypatch.setattr(sensors, "utcnow", lambda: NOW)
    ws = WorkspaceResource(root=str(sample_root))
    first = tick(consolidation_sensor, instance, None, workspace=ws)
    requested = {partition(r) for r in first.run_requests}
    assert {(day, ALICE) for day in ALICE_DAYS} <= requested
    assert len(requested) == 11  # every sample session completed on a day of its own
    # Only tenants with transcripts become consolidation partitions: no "<agent>~_global".
    assert first.dynamic_partitions_requests[0].partitions_def_name == "session_tenants"
    assert set(first.dynamic_partitions_requests[0].partition_keys) == {
        "support-bot~alice", "support-bot~bob", "research-assistant~alice", "research-assistant~carol"
    }
    second = tick(consolidation_sensor, instance, first.cursor, workspace=ws)
    assert second.run_requests == [] and "no newly completed session" in second.skip_reason.skip_message


def test_idle_timeout_over_ticks_and_changed_transcripts(root, instance, monkeypatch):
    clock = {"now": NOW}
    monkeypatch.setattr(sensors, "utcnow", lambda: clock["now"])
    ws = WorkspaceResource(root=str(root))
    path = write(root, "bot/sessions/ann/live.jsonl", jsonl(say("user", "Let us plan the Falcon launch.", iso(NOW - timedelta(minutes=10)))))
    first = tick(consolidation_sensor, instance, None, workspace=ws)
    assert first.run_requests == []
    assert json.loads(first.cursor)["sessions"]["bot/sessions/ann/live.jsonl"][1] == "open"

    clock["now"] = NOW + timedelta(minutes=15)  # 25 minutes idle: still open
    assert tick(consolidation_sensor, instance, first.cursor, workspace=ws).run_requests == []

    clock["now"] = NOW + timedelta(minutes=21)  # 31 minutes idle: complete, without reading it again
    idle = tick(consolidation_sensor, instance, first.cursor, workspace=ws)
    assert [partition(r) for r in idle.run_requests] == [("2026-11-20", "bot~ann")]
    assert tick(consolidation_sensor, instance, idle.cursor, workspace=ws).run_requests == []

    with path.open("a") as handle:  # the agent came back: a compaction and a closing line
        handle.write(jsonl({"type": "compaction", "summary": "Falcon launch planned.", "ts": iso(clock["now"])}, completed=iso(clock["now"])))
    again = tick(consolidation_sensor, instance, idle.cursor, workspace=ws)
    assert [partition(r) for r in again.run_requests] == [("2026-11-20", "bot~ann")]
    assert again.run_requests[0].run_key != idle.run_requests[0].run_key


def test_dreaming_threshold_and_debounce(lance_uri, instance, monkeypatch):
    clock = {"now": NOW}
    monkeypatch.setattr(sensors, "utcnow", lambda: clock["now"])
    resources = {"lancedb": LanceDBResource(uri=lance_uri), "embedder": EmbedderResource(kind="hash")}
    store = store_for(lance_uri)
    assert "no unpromoted episodes" in tick(dreaming_sensor, instance, None, **resources).skip_reason.skip_message

    add_episodes(store, ALICE, 4)
    add_episodes(store, "bot~ann", 2)
    below = tick(dreaming_sensor, instance, None, **resources)
    assert below.run_requests == [] and "4 unpromoted episodes, fewer than 5" in below.skip_reason.skip_message

    add_episodes(store, ALICE, 1, start=4)
    due = tick(dreaming_sensor, instance, below.cursor, **resources)
    assert [r.partition_key for r in due.run_requests] == [ALICE]
    assert due.dynamic_partitions_requests[0].partition_keys == [ALICE]

    clock["now"] = NOW + timedelta(minutes=5)  # the run has not promoted them yet: debounced
    waiting = tick(dreaming_sensor, instance, due.cursor, **resources)
    assert waiting.run_requests == [] and "debounced" in waiting.skip_reason.skip_message

    clock["now"] = NOW + timedelta(minutes=11)
    later = tick(dreaming_sensor, instance, waiting.cursor, **resources)
    assert [r.partition_key for r in later.run_requests] == [ALICE]
    assert later.run_requests[0].run_key != due.run_requests[0].run_key

    store.mark_promoted(store.episode_rows(ALICE)["id"].to_list(), clock["now"])
    clock["now"] = NOW + timedelta(minutes=30)
    assert tick(dreaming_sensor, instance, later.cursor, **resources).run_requests == []


def test_cursor_forgets_old_transcripts(root, instance, monkeypatch):
    import os

    monkeypatch.setattr(sensors, "utcnow", lambda: NOW)
    ws = WorkspaceResource(root=str(root))
    old = write(root, "bot/sessions/ann/old.jsonl", jsonl(say("user", "Long ago we met.", "2026-01-01T10:00:00Z"), completed="2026-01-01T10:05:00Z"))
    new = write(root, "bot/sessions/ann/new.jsonl", jsonl(say("user", "Today we met.", "2026-11-20T10:00:00Z"), completed="2026-11-20T10:05:00Z"))
    stamp = (NOW - timedelta(days=30)).timestamp()
    os.utime(old, (stamp, stamp))  # untouched for a month: history, left to a backfill
    os.utime(new, (NOW.timestamp(), NOW.timestamp()))
    result = tick(consolidation_sensor, instance, None, workspace=ws)
    assert [partition(r) for r in result.run_requests] == [("2026-11-20", "bot~ann")]
    assert list(json.loads(result.cursor)["sessions"]) == ["bot/sessions/ann/new.jsonl"]
    from memory_pipeline.consolidation.launch import completed_partitions

    assert completed_partitions(root, 30) == [("2026-01-01", "bot~ann"), ("2026-11-20", "bot~ann")]
