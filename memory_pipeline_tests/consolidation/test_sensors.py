"""Proves: the consolidation and dreaming sensors behave over several ticks. Completed sessions are
requested once, the tenants with new sessions in as few runs as their partitions allow (one run
over a range of neighbouring tenants, new tenants registered; at most three runs when the
tenants between them can be covered), and such a run, executed on a real instance, materializes
each tenant once with its own figures; an idle session is requested only once its timeout passes,
a changed transcript is requested again; dreaming needs >= 5 unpromoted episodes and is
debounced for 10 minutes per tenant."""

import json
from datetime import timedelta

import dagster as dg
import pytest

from memory_pipeline.consolidation import sensors
from memory_pipeline.consolidation.assets import consolidation_assets, consolidation_job
from memory_pipeline.consolidation.sensors import consolidation_sensor, dreaming_sensor, plan_runs
from memory_pipeline.orchestration.resources import EmbedderResource, LanceDBResource, WorkspaceResource
from memory_pipeline.orchestration.runs import RANGE_END_TAG, RANGE_START_TAG
from memory_pipeline_tests.helpers import make_resources, write
from memory_pipeline_tests.helpers.consolidation import ALICE, NOW, add_episodes, iso, jsonl, say, store_for


def tick(sensor, instance, cursor, **resources) -> dg.SensorResult:
    context = dg.build_sensor_context(instance=instance, cursor=cursor, resources=resources)
    return sensor(context)


def covered(request) -> tuple[str, str]:
    """(first tenant, last tenant) of the partitions a request's run covers."""
    if request.partition_key is not None:
        return request.partition_key, request.partition_key
    return request.tags[RANGE_START_TAG], request.tags[RANGE_END_TAG]


def since(request) -> str:
    return request.run_config["ops"]["episodic_summaries"]["config"]["since"]


def test_completed_sessions_requested_as_one_run_over_the_tenants(sample_root, instance, monkeypatch):
    monkeypatch.setattr(sensors, "utcnow", lambda: NOW)
    ws = WorkspaceResource(root=str(sample_root))
    first = tick(consolidation_sensor, instance, None, workspace=ws)
    # Four tenants registered together are neighbours: one run over all of them, consolidating
    # what completed since the earliest newly completed session.
    [request] = first.run_requests
    assert covered(request) == ("research-assistant~alice", "support-bot~bob")
    assert (request.tags["memory_pipeline/sessions"], request.tags["memory_pipeline/tenants"]) == ("11", "4")
    assert request.tags["memory_pipeline/trigger"] == "consolidation_sensor" and since(request) == "2026-10-26"
    # Only tenants with transcripts are consolidation partitions: no "<agent>~_global".
    assert first.dynamic_partitions_requests[0].partitions_def_name == "session_tenants"
    assert first.dynamic_partitions_requests[0].partition_keys == [
        "research-assistant~alice", "research-assistant~carol", "support-bot~alice", "support-bot~bob"
    ]
    second = tick(consolidation_sensor, instance, first.cursor, workspace=ws)
    assert second.run_requests == [] and "no newly completed session" in second.skip_reason.skip_message
    # A tick evaluated again from the same cursor (its cursor update lost) asks for the same run:
    # Dagster launches a run key once.
    again = tick(consolidation_sensor, instance, None, workspace=ws)
    assert [r.run_key for r in again.run_requests] == [r.run_key for r in first.run_requests]


REGISTERED = ["a~1", "a~2", "a~3", "gone~x", "b~1", "b~2", "b~3", "b~4", "c~1"]


def test_plan_runs_covers_neighbours_together_and_joins_narrow_gaps_up_to_a_bound():
    tenants = lambda runs: [r.tenants for r in runs]  # noqa: E731
    assert tenants(plan_runs(["a~2", "a~1", "a~3"], REGISTERED)) == [("a~1", "a~2", "a~3")]
    assert tenants(plan_runs(["a~1", "a~3", "b~2"], REGISTERED)) == [("a~1",), ("a~3",), ("b~2",)]
    workspace = set(REGISTERED) - {"gone~x"}
    # Bounded to three runs: the narrowest gap (a~2) is joined first.
    runs = plan_runs(["a~1", "a~3", "b~2", "c~1"], REGISTERED, bridgeable=workspace, max_runs=3)
    assert tenants(runs) == [("a~1", "a~2", "a~3"), ("b~2",), ("c~1",)]
    # Bounded to one: gone~x (its folder is gone, a run over it would fail) is never covered.
    runs = plan_runs(["a~1", "a~3", "b~2", "c~1"], REGISTERED, bridgeable=workspace, max_runs=1)
    assert tenants(runs) == [("a~1", "a~2", "a~3"), ("b~2", "b~3", "b~4", "c~1")]
    runs = plan_runs(["a~1", "b~1", "b~4"], REGISTERED, bridgeable=workspace, max_runs=1)
    assert tenants(runs) == [("a~1",), ("b~1", "b~2", "b~3", "b~4")]
    assert [(r.partition_key, r.partition_range, r.label) for r in runs] == [
        ("a~1", None, "a~1"), (None, ("b~1", "b~4"), "b~1..b~4 (4 tenants)"),
    ]
    assert plan_runs([], REGISTERED) == []
    with pytest.raises(ValueError, match="not registered"):
        plan_runs(["z~9"], REGISTERED)


def session(day: str, text: str) -> str:
    return jsonl(say("user", text, f"{day}T09:00:00Z"), say("assistant", "Noted.", f"{day}T09:01:00Z"),
                 completed=f"{day}T09:05:00Z")


def own_figures(result: dg.ExecuteInProcessResult, asset: str, name: str) -> dict[str, object]:
    """{partition: figure} of the partitions whose materialization carries the figure."""
    out = {}
    for event in result.get_asset_materialization_events():
        mat = event.step_materialization_data.materialization
        if mat.asset_key.to_user_string() == asset and name in mat.metadata:
            out[mat.partition] = mat.metadata[name].value
    return out


@pytest.mark.slow
def test_sessions_of_two_tenants_are_one_run_on_a_real_instance(root, lance_uri, monkeypatch):
    monkeypatch.setattr(sensors, "utcnow", lambda: NOW)
    ws = WorkspaceResource(root=str(root))
    job = dg.Definitions(
        assets=consolidation_assets, jobs=[consolidation_job], resources=make_resources(root, lance_uri)
    ).resolve_job_def("consolidation_job")
    days = ["2026-11-16", "2026-11-18", "2026-11-20"]
    for n, day in enumerate(days):
        write(root, f"bot/sessions/ann/s{n}.jsonl", session(day, f"Ann booked the Falcon review number {n}."))
    write(root, "bot/sessions/bea/s0.jsonl", session("2026-11-19", "Bea moved to the Osprey team."))

    with dg.instance_for_test() as instance:

        def launch(result: dg.SensorResult) -> list[dg.ExecuteInProcessResult]:
            for request in result.dynamic_partitions_requests:
                instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
            return [
                job.execute_in_process(
                    instance=instance, partition_key=r.partition_key, tags=r.tags, run_config=r.run_config
                )
                for r in result.run_requests
            ]

        first = tick(consolidation_sensor, instance, None, workspace=ws)
        assert [covered(r) for r in first.run_requests] == [("bot~ann", "bot~bea")]
        [run] = launch(first)
        assert run.success
        tags = instance.get_run_by_id(run.run_id).tags
        assert (tags[RANGE_START_TAG], tags[RANGE_END_TAG]) == ("bot~ann", "bot~bea")
        assert tags["memory_pipeline/trigger"] == "consolidation_sensor" and tags["memory_pipeline/sessions"] == "4"
        # Each tenant is materialized once, with its own figures: no partition per day.
        for asset in ("episodic_summaries", "semantic_graph", "entity_dedup"):
            assert instance.get_materialized_partitions(dg.AssetKey(asset)) == {"bot~ann", "bot~bea"}
        assert own_figures(run, "episodic_summaries", "sessions_complete") == {"bot~ann": 3, "bot~bea": 1}
        assert own_figures(run, "semantic_graph", "episodes_read") == {"bot~ann": 3, "bot~bea": 1}
        assert own_figures(run, "entity_dedup", "entities_before").keys() == {"bot~ann", "bot~bea"}
        assert sorted(store_for(lance_uri).episode_rows("bot~ann")["day"].to_list()) == days

        second = tick(consolidation_sensor, instance, first.cursor, workspace=ws)
        assert second.run_requests == []

        # A later session of ann: a new run of ann alone, which consolidates only that session.
        write(root, "bot/sessions/ann/s3.jsonl", session("2026-11-18", "Ann moved the Falcon review to Friday."))
        later = tick(consolidation_sensor, instance, second.cursor, workspace=ws)
        assert [covered(r) for r in later.run_requests] == [("bot~ann", "bot~ann")] and since(later.run_requests[0]) == "2026-11-18"
        assert later.run_requests[0].run_key != first.run_requests[0].run_key
        [rerun] = launch(later)
        assert rerun.success and own_figures(rerun, "episodic_summaries", "sessions_complete") == {"bot~ann": 1}
        assert own_figures(rerun, "semantic_graph", "episodes_read") == {"bot~ann": 1}
        assert sorted(store_for(lance_uri).episode_rows("bot~ann")["day"].to_list()) == [*days[:2], "2026-11-18", days[2]]
        assert tick(consolidation_sensor, instance, later.cursor, workspace=ws).run_requests == []


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
    assert [(covered(r), since(r)) for r in idle.run_requests] == [(("bot~ann", "bot~ann"), "2026-11-20")]
    assert tick(consolidation_sensor, instance, idle.cursor, workspace=ws).run_requests == []

    with path.open("a") as handle:  # the agent came back: a compaction and a closing line
        handle.write(jsonl({"type": "compaction", "summary": "Falcon launch planned.", "ts": iso(clock["now"])}, completed=iso(clock["now"])))
    again = tick(consolidation_sensor, instance, idle.cursor, workspace=ws)
    assert [(covered(r), since(r)) for r in again.run_requests] == [(("bot~ann", "bot~ann"), "2026-11-20")]
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
    # The run consolidates from the day of the new session: the old one is left to a backfill.
    assert [(covered(r), since(r)) for r in result.run_requests] == [(("bot~ann", "bot~ann"), "2026-11-20")]
    assert list(json.loads(result.cursor)["sessions"]) == ["bot/sessions/ann/new.jsonl"]
    from memory_pipeline.consolidation.launch import completed_tenants

    assert completed_tenants(root, 30) == ["bot~ann"]
    assert completed_tenants(root, 30, days=["2026-01-01"]) == ["bot~ann"]
    assert completed_tenants(root, 30, days=["2026-01-02"]) == []
