"""Proves: the access log and activation work end to end on real parts (the L0 index built by its
Dagster job, LanceDB under ``tmp_path``, the ``memory_activation`` asset materialized in a real
instance). The decay is the documented one (a use halves in 7 days, a return weighs 0.1); a unit
recall returned and a caller read becomes hot, its tier shows on the next search and in the
asset's metadata; between two equally relevant notes the used one ranks first, while a clearly
more relevant unused note stays above a hot but less relevant one; the log stores scrubbed
citations (one recall cited from its rows, whose path was screened when indexed, as cited); forgetting the tenant removes its log and activation rows; the nightly schedule asks
for one run over every tenant, or skips when there is none.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg

import pytest

from memory_pipeline.activation.access_log import SPOOL, Access, access_rows, flush_spool, record_access
from memory_pipeline.activation.assets import memory_activation
from memory_pipeline.activation.decay import activations, tier
from memory_pipeline.activation.ranking import MAX_LIFT, lift
from memory_pipeline.activation.schedules import plan_activation_run
from memory_pipeline.embedding import HashEmbedder
from memory_pipeline.forget import forget_tenant
from memory_pipeline.orchestration.partitions import TENANTS_PARTITION
from memory_pipeline.orchestration.resources import LanceDBResource
from memory_pipeline.recall.get import get
from memory_pipeline.recall.search import search
from memory_pipeline.store.base import COMPACT_AT_FRAGMENTS, LanceBase, fragment_count
from memory_pipeline.store.tables import ACCESS_LOG, ACTIVATION
from memory_pipeline_tests.helpers import write
from memory_pipeline_tests.helpers.object_store import BUCKET
from memory_pipeline_tests.helpers.recall import ingest, recall_settings

NOW = datetime(2026, 11, 20, 12, tzinfo=UTC)
ALICE = "support-bot~alice"
TWIN = "The staging database password rotates every Monday at noon.\n"


def test_decay_and_tiers_are_the_documented_ones():
    events = [("a", "used", NOW), ("b", "used", NOW - timedelta(days=7)), ("c", "returned", NOW - timedelta(days=14)),
              ("d", "used", NOW + timedelta(hours=1)), ("a", "returned", NOW), ("e", "viewed", NOW)]
    found = activations(events, NOW)
    assert {k: (round(v.activation, 6), round(v.use_activation, 6), v.used, v.returned, v.tier) for k, v in found.items()} == {
        "a": (1.1, 1.0, 1, 1, "hot"), "b": (0.5, 0.5, 1, 0, "warm"), "c": (0.025, 0.0, 0, 1, "cool")}
    daily = [("d", "returned", NOW - timedelta(days=day, hours=hour)) for day in range(7) for hour in (1, 2, 3)]
    # a return counts once a day, the first of the day: 0.1 * 2^(-3/168) * sum(2^(-d/7), d=0..6)
    assert round(activations(daily, NOW)["d"].activation, 4) == 0.5238
    assert [tier(x) for x in (0.0, 0.249, 0.25, 0.999, 1.0)] == ["cool", "cool", "warm", "warm", "hot"]
    assert (lift(0.0), round(lift(1.0), 6), lift(1e9) <= 1 + MAX_LIFT) == (1.0, 1.016, True)


@pytest.fixture
def indexed(tmp_path):
    root, lance_uri = tmp_path / "agents", str(tmp_path / "lancedb")
    write(root, "support-bot/users/alice/memory/ops-a.md", "# Ops\n\n" + TWIN)
    write(root, "support-bot/users/alice/memory/ops-b.md", "# Ops\n\n" + TWIN)
    write(root, "support-bot/users/alice/memory/other.md",
          "# Misc\n\nThe staging database password rotates on Mondays; ask the on-call engineer first.\n")
    write(root, "support-bot/users/bob/MEMORY.md", "# Bob\n\nBob likes tea.\n")
    ingest(root, lance_uri)
    return root, lance_uri, recall_settings(root, lance_uri)


def _search(settings, query="When does the staging database password rotate?"):
    return search(query, "support-bot", "alice", settings=settings, embedder=HashEmbedder(), min_score=0.0, k=6)


def _age(lance_uri: str, tenant: str) -> dg.MaterializeResult:
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(TENANTS_PARTITION, [tenant])
        result = dg.materialize([memory_activation], instance=instance, partition_key=tenant,
                                resources={"lancedb": LanceDBResource(uri=lance_uri)})
        assert result.success
        return result.asset_materializations_for_node("memory_activation")[0].metadata


def test_a_used_unit_turns_hot_and_wins_the_near_tie(indexed):
    root, lance_uri, settings = indexed
    before = _search(settings)
    twins = [r for r in before if r.path.endswith(("ops-a.md", "ops-b.md"))]
    assert len(twins) == 2 and twins[0].score == twins[1].score  # an exact tie
    assert [r.tier for r in before] == ["cool"] * len(before)
    loser = twins[1]
    # A week of use: the second twin is returned and read every day.
    for day in range(7):
        at = datetime.now(UTC) - timedelta(days=day)
        assert record_access(lance_uri, "search", returned=_search(settings), now=at) == len(before)
        assert record_access(lance_uri, "get", used=[get(loser.citation, agent="support-bot", user="alice", settings=settings)], now=at) == 1
    metadata = _age(lance_uri, ALICE)
    assert {k: metadata[k].value for k in ("events", "hot", "warm", "cool", "unresolved")} == {
        "events": 7 * (len(before) + 1), "hot": 1, "warm": len(before) - 1, "cool": 0, "unresolved": 0}

    after = _search(settings)
    assert after[0].citation == loser.citation and after[0].tier == "hot"
    assert [r.score for r in after] == sorted(r.score for r in before)[::-1]  # scores untouched
    # A clearly more relevant unused note stays above the hot twin.
    other = _search(settings, "Ask the on-call engineer before the staging password rotates on Mondays")
    assert other[0].path.endswith("other.md") and other[0].score > other[1].score * (1 + MAX_LIFT)
    assert {r.tier for r in other if r.path.endswith("ops-b.md") or r.path.endswith("ops-a.md")} >= {"hot"}


def test_a_citation_from_the_index_is_stored_as_cited_any_other_scrubbed():
    from memory_pipeline.text.scrub import scrub_secrets

    token = "ghp_" + "a1B2c3D4e5" * 3 + "f6G7h8"
    asked = f"support-bot/users/alice/memory/{token}.md#L1"
    rows = access_rows("search", returned=[Access(ALICE, "support-bot/users/alice/memory/ops-a.md#L1-L3", ("r1", "r2"))],
                       used=[Access(ALICE, asked)], now=NOW)
    assert [(r["unit"], r["row_ids"], r["event"]) for r in rows] == [
        ("support-bot/users/alice/memory/ops-a.md#L1-L3", ["r1", "r2"], "returned"),
        (scrub_secrets(asked).text, [], "used")]
    assert token not in rows[1]["unit"]


def test_on_object_storage_each_search_appends_its_events_and_the_log_is_compacted(s3):
    uri = f"s3://{BUCKET}/lancedb"
    LanceBase(uri).open(ACCESS_LOG)  # the table a first ingest leaves
    searches = COMPACT_AT_FRAGMENTS + 4
    for i in range(searches):
        returned = [Access(ALICE, f"support-bot/users/alice/memory/ops-{i}.md#L{j}", (f"r{i}-{j}",)) for j in range(3)]
        assert record_access(uri, "search", returned=returned, now=NOW) == 3
    table = LanceBase(uri).db.open_table(ACCESS_LOG.name)
    # Each search adds a fragment (the events go to the table at once there), and a write once
    # there are many compacts them: none waits for the nightly run.
    assert fragment_count(table) < COMPACT_AT_FRAGMENTS
    units = LanceBase(uri).read(ACCESS_LOG, columns=["id", "unit", "event"])
    assert units.height == units["id"].n_unique() == 3 * searches
    assert set(units["unit"]) == {f"support-bot/users/alice/memory/ops-{i}.md#L{j}" for i in range(searches) for j in range(3)}


def test_the_log_is_scrubbed_and_forgotten_with_the_tenant(indexed):
    root, lance_uri, _ = indexed
    token = "ghp_" + "a1B2c3D4e5" * 3 + "f6G7h8"
    record_access(lance_uri, "get", used=[Access(ALICE, f"support-bot/users/alice/memory/{token}.md#L1")], now=NOW)
    record_access(lance_uri, "get", used=[Access("support-bot~bob", "support-bot/users/bob/MEMORY.md#L3")], now=NOW)
    spooled = sorted(p.name for p in (Path(lance_uri) / SPOOL).iterdir())
    assert spooled == ["support-bot~alice.jsonl", "support-bot~bob.jsonl"]
    assert token not in "".join((Path(lance_uri) / SPOOL / name).read_text() for name in spooled)
    assert flush_spool(lance_uri) == 2 and not list((Path(lance_uri) / SPOOL).iterdir())
    base = LanceBase(lance_uri)
    units = base.read(ACCESS_LOG, columns=["tenant", "unit", "event", "channel"]).sort("tenant").to_dicts()
    assert token not in str(units) and units[0]["unit"].startswith("support-bot/users/alice/memory/[REDACTED")
    assert [(u["tenant"], u["event"], u["channel"]) for u in units] == [(ALICE, "used", "get"), ("support-bot~bob", "used", "get")]
    _age(lance_uri, "support-bot~bob")
    assert base.read(ACTIVATION, columns=["tenant", "tier"]).to_dicts() == [{"tenant": "support-bot~bob", "tier": "warm"}]

    record_access(lance_uri, "get", used=[Access("support-bot~bob", "support-bot/users/bob/MEMORY.md#L3")], now=NOW)
    forget_tenant("support-bot", "bob", root=root, lancedb_uri=lance_uri)
    assert not (Path(lance_uri) / SPOOL / "support-bot~bob.jsonl").exists()
    assert base.read(ACTIVATION, columns=["tenant"]).height == 0
    assert base.read(ACCESS_LOG, columns=["tenant"])["tenant"].to_list() == [ALICE]


def test_the_nightly_schedule_ages_every_tenant_in_one_run():
    assert isinstance(plan_activation_run([]), dg.SkipReason)
    request = plan_activation_run(["a~x", "b~y", "c~z"])
    assert request.tags == {"dagster/asset_partition_range_start": "a~x", "dagster/asset_partition_range_end": "c~z"}
