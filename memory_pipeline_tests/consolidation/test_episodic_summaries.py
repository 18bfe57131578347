"""Proves: episodic_summaries writes one row per completed session of the tenant (of the days the
run asks for), idempotent by source_id (a rerun changes nothing, a new compaction replaces the
row); by default a run consolidates only sessions not consolidated yet or whose transcript grew,
so a rerun reads nothing and a failed run is caught up; a run over a range of tenants reports
each tenant's own figures and check; secrets are scrubbed, malformed transcripts consolidated
from their good lines."""

from datetime import timedelta

import dagster as dg
import polars as pl

from memory_pipeline.consolidation.assets import episodic_summaries
from memory_pipeline.orchestration.materializations import PARTITIONS_FIGURE
from memory_pipeline.orchestration.partitions import SESSION_TENANTS_PARTITION
from memory_pipeline.orchestration.runs import RANGE_END_TAG, RANGE_START_TAG
from memory_pipeline_tests.helpers import make_resources, write
from memory_pipeline_tests.helpers.consolidation import (
    ALICE,
    ALICE_DAYS,
    consolidate,
    jsonl,
    metadata,
    say,
    store_for,
)

ONLY_EPISODES = [episodic_summaries]


def episodes(lance_uri, tenant=ALICE) -> pl.DataFrame:
    return store_for(lance_uri).episode_rows(tenant).sort("completed_at")


def test_one_episode_per_session_completed_that_day(sample_root, lance_uri, instance):
    res = make_resources(sample_root, lance_uri)
    result = consolidate(instance, res, "2026-10-30", assets=ONLY_EPISODES)
    assert result.success
    rows = episodes(lance_uri)
    assert rows.height == 1
    row = rows.row(0, named=True)
    assert row["path"] == "support-bot/sessions/alice/sess-20261030-tw02.jsonl"
    assert row["session_id"] == "sess-20261030-tw02"
    assert row["source_id"] == "support-bot/alice/sess-20261030-tw02#c0"
    assert (row["start_line"], row["end_line"]) == (1, 16)
    assert row["turn_ids"][:2] == ["t1", "t2"]
    assert row["produced_by"] == "extractive" and row["model"] == "hash-bow"
    assert row["expires_at"] - row["created_at"] == timedelta(days=90)
    assert row["promoted_at"] is None and len(row["vector"]) == 64
    assert "Dana Whitfield" in row["key_topics"]
    meta = metadata(result, "episodic_summaries")
    assert meta["episodes_inserted"] == 1 and meta["path_extractive"] == 1
    check = result.get_asset_check_evaluations()[0]
    assert check.passed


def test_rematerializing_a_day_changes_nothing(sample_root, lance_uri, instance):
    res = make_resources(sample_root, lance_uri)
    consolidate(instance, res, "2026-11-18", assets=ONLY_EPISODES)
    before = episodes(lance_uri)
    result = consolidate(instance, res, "2026-11-18", assets=ONLY_EPISODES)
    after = episodes(lance_uri)
    assert before.equals(after)
    assert before.row(0, named=True)["produced_by"] == "compaction"
    assert metadata(result, "episodic_summaries")["episodes_updated"] == 1  # asked again: rewritten as it was


def test_by_default_only_sessions_not_consolidated_yet(sample_root, lance_uri, instance):
    res = make_resources(sample_root, lance_uri)
    first = consolidate(instance, res, None, assets=ONLY_EPISODES, again=False)
    assert metadata(first, "episodic_summaries")["sessions_complete"] == len(ALICE_DAYS)
    assert metadata(first, "episodic_summaries")["days"] == f"{ALICE_DAYS[0]}..{ALICE_DAYS[-1]} (5 days)"
    before = episodes(lance_uri)
    # Nothing new: no transcript is even read again, and the rows stay as they were.
    rerun = consolidate(instance, res, None, assets=ONLY_EPISODES, again=False)
    figures = metadata(rerun, "episodic_summaries")
    assert (figures["sessions_complete"], figures["sessions_unchanged"], figures["episodes_updated"]) == (0, 5, 0)
    assert episodes(lance_uri).equals(before)
    # A transcript that grew (a line after its closing one) is consolidated again, the others not.
    path = sample_root / before.row(0, named=True)["path"]
    with path.open("a") as handle:
        handle.write(jsonl(say("user", "One more thing: Dana approved the Lisbon trip.", "2026-10-26T18:00:00Z")))
    grown = metadata(consolidate(instance, res, None, assets=ONLY_EPISODES, again=False), "episodic_summaries")
    assert (grown["sessions_complete"], grown["episodes_updated"], grown["sessions_unchanged"]) == (1, 1, 4)
    assert episodes(lance_uri)["end_line"].to_list()[0] > before["end_line"].to_list()[0]


def test_a_run_over_a_range_of_tenants_reports_each_tenant(sample_root, lance_uri, instance):
    res = make_resources(sample_root, lance_uri)
    tenants = ["support-bot~alice", "support-bot~bob"]
    instance.add_dynamic_partitions(SESSION_TENANTS_PARTITION, tenants)
    job = dg.Definitions(assets=[episodic_summaries], jobs=[dg.define_asset_job(
        "backfill", selection=[episodic_summaries], partitions_def=episodic_summaries.partitions_def)], resources=res).resolve_job_def("backfill")
    result = job.execute_in_process(instance=instance, tags={RANGE_START_TAG: tenants[0], RANGE_END_TAG: tenants[1]})
    assert result.success
    assert sorted(store_for(lance_uri).episode_rows(tenants[1])["day"].to_list()) == ["2026-10-29", "2026-11-13"]
    own = {
        e.partition: {k: v.value for k, v in e.step_materialization_data.materialization.metadata.items()}
        for e in result.get_asset_materialization_events()
    }
    assert {k: (m["sessions_complete"], m["dagster/row_count"]) for k, m in own.items()} == {
        tenants[0]: (5, 5), tenants[1]: (2, 2),
    }
    checked = sorted((e.partition, e.passed) for e in result.get_asset_check_evaluations() if e.partition)
    assert checked == [(tenants[0], True), (tenants[1], True)]
    # The run's own figures (timings, previews) are one observation of the asset, not per tenant.
    [run_wide] = [e.asset_observation_data.asset_observation.metadata for e in result.get_asset_observation_events()]
    assert run_wide[PARTITIONS_FIGURE].value == 2 and "sessions_complete" not in run_wide


def _falcon_consolidated(root, lance_uri, instance):
    """One completed session of bot~ann, consolidated: the resources and the transcript's path."""
    res = make_resources(root, lance_uri)
    path = write(root, "bot/sessions/ann/s1.jsonl", jsonl(
        say("user", "We decided to ship the Falcon release on Friday.", "2026-11-02T10:00:00Z", "t1"),
        say("assistant", "Noted, Falcon ships Friday after the QA sign-off.", "2026-11-02T10:01:00Z", "t2"),
        completed="2026-11-02T10:05:00Z",
    ))
    consolidate(instance, res, "2026-11-02", tenant="bot~ann", assets=ONLY_EPISODES)
    return res, path


def test_new_compaction_replaces_the_episode(root, lance_uri, instance):
    res, path = _falcon_consolidated(root, lance_uri, instance)
    text = path.read_text().replace(
        '{"type": "session.completed"',
        '{"type": "compaction", "summary": "Falcon ships on Friday after QA.", "ts": "2026-11-02T10:04:00Z"}\n{"type": "session.completed"',
    )
    path.write_text(text)
    result = consolidate(instance, res, "2026-11-02", tenant="bot~ann", assets=ONLY_EPISODES)
    rows = episodes(lance_uri, "bot~ann")
    assert rows["source_id"].to_list() == ["bot/ann/s1#c1"]
    assert rows.row(0, named=True)["produced_by"] == "compaction"
    assert metadata(result, "episodic_summaries")["episodes_superseded"] == 1


def test_an_edited_transcript_is_summarized_again(root, lance_uri, instance):
    res, path = _falcon_consolidated(root, lance_uri, instance)
    path.write_text(path.read_text().replace("Falcon", "Osprey"))
    edited = consolidate(instance, res, "2026-11-02", tenant="bot~ann", assets=ONLY_EPISODES)
    rows = episodes(lance_uri, "bot~ann")
    assert rows.height == 1 and "Osprey" in rows.row(0, named=True)["summary"]
    assert "Falcon" not in rows.row(0, named=True)["summary"]
    assert metadata(edited, "episodic_summaries")["episodes_updated"] == 1


def test_secrets_are_scrubbed_and_malformed_lines_reported(root, lance_uri, instance):
    res = make_resources(root, lance_uri)
    secret = "postgres://admin:Sup3rSecretPassw0rd@db.example.com:5432/ops"
    write(root, "bot/sessions/ann/s1.jsonl", jsonl(
        say("user", f"Our production database is at {secret} and it keeps timing out every night.", "2026-11-02T10:00:00Z"),
        say("assistant", "Rotate that password now; the Frankfurt replica timeouts come from the pooler.", "2026-11-02T10:01:00Z"),
    ) + "{broken json\n" + jsonl(completed="2026-11-02T10:05:00Z"))
    result = consolidate(instance, res, "2026-11-02", tenant="bot~ann", assets=ONLY_EPISODES)
    row = episodes(lance_uri, "bot~ann").row(0, named=True)
    assert "Sup3rSecretPassw0rd" not in row["summary"] + row["l0_abstract"]
    meta = metadata(result, "episodic_summaries")
    assert meta["secrets_redacted"] >= 1 and meta["problems"] == 1
    assert "not valid JSON" in meta["problems_detail"]


def test_open_session_is_not_consolidated(root, lance_uri, instance):
    from datetime import UTC, datetime

    res = make_resources(root, lance_uri)
    now = datetime.now(UTC)
    write(root, "bot/sessions/ann/live.jsonl", jsonl(say("user", "Still talking about the Falcon release.", now.strftime("%Y-%m-%dT%H:%M:%SZ"))))
    result = consolidate(instance, res, now.date().isoformat(), tenant="bot~ann", assets=ONLY_EPISODES)
    assert metadata(result, "episodic_summaries")["sessions_open"] == 1
    assert episodes(lance_uri, "bot~ann").height == 0


def test_a_tenant_failing_in_a_run_of_two_is_not_materialized_and_the_next_run_catches_up(
    sample_root, lance_uri, instance, monkeypatch
):
    from memory_pipeline.consolidation import assets
    from memory_pipeline.consolidation.assets import consolidation_assets, consolidation_job

    alice, bob = "support-bot~alice", "support-bot~bob"
    instance.add_dynamic_partitions(SESSION_TENANTS_PARTITION, [alice, bob])
    job = dg.Definitions(
        assets=consolidation_assets, jobs=[consolidation_job], resources=make_resources(sample_root, lance_uri)
    ).resolve_job_def("consolidation_job")
    real = assets.consolidate_episodes

    def failing_for_bob(root, store, tenant, *args, **kwargs):
        if tenant.key == bob:
            raise OSError("disk full")
        return real(root, store, tenant, *args, **kwargs)

    monkeypatch.setattr(assets, "consolidate_episodes", failing_for_bob)
    tags = {RANGE_START_TAG: alice, RANGE_END_TAG: bob}
    failed = job.execute_in_process(instance=instance, tags=tags, raise_on_error=False)
    assert not failed.success
    # Alice's episodes are written and hers alone materialized, with her check; bob's partition is
    # not; the graph steps did not run.
    assert instance.get_materialized_partitions(dg.AssetKey("episodic_summaries")) == {alice}
    assert [(e.partition, e.passed) for e in failed.get_asset_check_evaluations() if e.partition] == [(alice, True)]
    assert instance.get_materialized_partitions(dg.AssetKey("semantic_graph")) == set()
    assert "support-bot~bob: OSError: disk full" in str(failed.all_events)

    monkeypatch.setattr(assets, "consolidate_episodes", real)
    caught_up = job.execute_in_process(instance=instance, tags=tags)
    assert caught_up.success
    figures = {
        (e.asset_key.to_user_string(), e.partition): e.step_materialization_data.materialization.metadata
        for e in caught_up.get_asset_materialization_events()
    }
    # Bob's sessions are consolidated now; alice's are not again, but her graph, which the failed
    # run never built, is built from her five episodes.
    assert figures[("episodic_summaries", bob)]["sessions_complete"].value == 2
    assert figures[("episodic_summaries", alice)]["sessions_complete"].value == 0
    assert figures[("semantic_graph", alice)]["episodes_read"].value == 5
    assert figures[("semantic_graph", bob)]["episodes_read"].value == 2
