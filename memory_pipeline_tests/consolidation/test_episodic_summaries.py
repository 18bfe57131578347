"""episodic_summaries: one row per completed session of the partition's day, idempotent by
source_id (a rerun changes nothing and summarizes nothing again, an edited transcript is
summarized again, a new compaction replaces the row), a backfill over a range of
days in one run (each day holding a session reports its own figures, the days between nothing), secrets scrubbed, malformed transcripts consolidated from their good lines."""

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
    # The session holds what it held: its episode is not summarized again.
    assert metadata(result, "episodic_summaries")["episodes_updated"] == 0
    assert metadata(result, "episodic_summaries")["episodes_unchanged"] == 1


def test_backfill_over_a_range_of_days_in_one_run(sample_root, lance_uri, instance):
    res = make_resources(sample_root, lance_uri)
    instance.add_dynamic_partitions(SESSION_TENANTS_PARTITION, [ALICE])
    job = dg.Definitions(assets=[episodic_summaries], jobs=[dg.define_asset_job(
        "backfill", selection=[episodic_summaries], partitions_def=episodic_summaries.partitions_def)], resources=res).resolve_job_def("backfill")
    result = job.execute_in_process(
        instance=instance,
        tags={RANGE_START_TAG: f"{ALICE_DAYS[0]}|{ALICE}", RANGE_END_TAG: f"{ALICE_DAYS[-1]}|{ALICE}"},
    )
    assert result.success
    rows = episodes(lance_uri)
    assert rows["day"].to_list() == list(ALICE_DAYS)
    assert rows["source_id"].n_unique() == 5
    # Each day holding a session reports its own figures and check; the days between carry no
    # figures; the run's own figures are one observation of the asset.
    own = {
        e.partition: e.step_materialization_data.materialization.metadata
        for e in result.get_asset_materialization_events() if "sessions_complete" in e.step_materialization_data.materialization.metadata
    }
    assert sorted(own) == [f"{day}|{ALICE}" for day in ALICE_DAYS]
    assert {m["sessions_complete"].value for m in own.values()} == {1}
    checked = sorted(e.partition for e in result.get_asset_check_evaluations() if e.partition)
    assert checked == sorted(own)
    between = f"2026-10-27|{ALICE}"
    latest = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey("episodic_summaries"), asset_partitions=[between]), limit=1
    ).records[0].asset_materialization.metadata
    assert not any(not key.startswith("dagster/") for key in latest), latest
    [run_wide] = [e.asset_observation_data.asset_observation.metadata for e in result.get_asset_observation_events()]
    assert run_wide[PARTITIONS_FIGURE].value == len(ALICE_DAYS) and run_wide["episodes_inserted"].value == len(ALICE_DAYS)


def test_new_compaction_replaces_the_episode(root, lance_uri, instance):
    res = make_resources(root, lance_uri)
    path = write(root, "bot/sessions/ann/s1.jsonl", jsonl(
        say("user", "We decided to ship the Falcon release on Friday.", "2026-11-02T10:00:00Z", "t1"),
        say("assistant", "Noted, Falcon ships Friday after the QA sign-off.", "2026-11-02T10:01:00Z", "t2"),
        completed="2026-11-02T10:05:00Z",
    ))
    consolidate(instance, res, "2026-11-02", tenant="bot~ann", assets=ONLY_EPISODES)
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
    res = make_resources(root, lance_uri)
    path = write(root, "bot/sessions/ann/s1.jsonl", jsonl(
        say("user", "We decided to ship the Falcon release on Friday.", "2026-11-02T10:00:00Z", "t1"),
        say("assistant", "Noted, Falcon ships Friday after the QA sign-off.", "2026-11-02T10:01:00Z", "t2"),
        completed="2026-11-02T10:05:00Z",
    ))
    consolidate(instance, res, "2026-11-02", tenant="bot~ann", assets=ONLY_EPISODES)
    again = consolidate(instance, res, "2026-11-02", tenant="bot~ann", assets=ONLY_EPISODES)
    assert (metadata(again, "episodic_summaries")["episodes_unchanged"], metadata(again, "episodic_summaries")["episodes_updated"]) == (1, 0)
    path.write_text(path.read_text().replace("Falcon", "Osprey"))
    edited = consolidate(instance, res, "2026-11-02", tenant="bot~ann", assets=ONLY_EPISODES)
    rows = episodes(lance_uri, "bot~ann")
    assert rows.height == 1 and "Osprey" in rows.row(0, named=True)["summary"]
    assert "Falcon" not in rows.row(0, named=True)["summary"]
    assert (metadata(edited, "episodic_summaries")["episodes_unchanged"], metadata(edited, "episodic_summaries")["episodes_updated"]) == (0, 1)


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
