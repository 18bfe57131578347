"""semantic_graph and entity_dedup through Dagster with the real spaCy model: a contradiction closes
the old relation's valid_to (in either consolidation order), reruns change nothing and read no
unchanged episode or statement again while an edited transcript is read again, "Alice" merges
into "Alice Johnson" with her relations re-pointed, and a failing extraction never blocks (and
is tried again by the next run)."""

import polars as pl
import pytest

from memory_pipeline.consolidation import pipeline
from memory_pipeline.timeline.records import supersession_rows
from memory_pipeline_tests.helpers import make_resources, write
from memory_pipeline_tests.helpers.consolidation import consolidate, jsonl, metadata, say, store_for

pytestmark = pytest.mark.slow
ANN = "bot~ann"


def write_moves(root):
    write(root, "bot/sessions/ann/s1.jsonl", jsonl(
        say("user", "Hi, quick context: I live in Lisbon and I work at Tidewater Logistics.", "2026-10-01T09:00:00Z", "t1"),
        say("assistant", "Thanks, noted that you're in Lisbon.", "2026-10-01T09:00:30Z", "t2"),
        completed="2026-10-01T09:05:00Z",
    ))
    write(root, "bot/sessions/ann/s2.jsonl", jsonl(
        say("user", "Update: I moved to Porto last weekend. My manager is Dana Whitfield.", "2026-11-11T15:00:00Z", "t1"),
        say("assistant", "Noted, Porto from now on.", "2026-11-11T15:00:20Z", "t2"),
        completed="2026-11-11T15:05:00Z",
    ))
    write(root, "bot/sessions/ann/s3.jsonl", jsonl(
        say("user", "From December my manager is Tomás Ribeiro, our new CTO.", "2026-11-18T08:52:00Z", "t1"),
        completed="2026-11-18T08:55:00Z",
    ))


def relations(lance_uri, predicate: str) -> pl.DataFrame:
    rows = store_for(lance_uri).relation_rows(ANN, f"predicate = '{predicate}'")
    return rows.sort("valid_from").select("object", "valid_from", "valid_to", "source_episode", "line")


@pytest.mark.parametrize("order", [("2026-10-01", "2026-11-11", "2026-11-18"), ("2026-11-18", "2026-11-11", "2026-10-01")])
def test_contradiction_closes_valid_to_in_any_order(root, lance_uri, instance, order):
    write_moves(root)
    res = make_resources(root, lance_uri)
    for day in order:
        assert consolidate(instance, res, day, tenant=ANN).success
    lives = relations(lance_uri, "lives_in")
    assert lives["object"].to_list() == ["Lisbon", "Porto"]
    assert lives["valid_to"][0] == lives["valid_from"][1]
    assert lives["valid_to"][1] is None
    managers = relations(lance_uri, "manager")
    assert managers["object"].to_list() == ["Dana Whitfield", "Tomás Ribeiro"]
    assert managers["valid_to"][0] == managers["valid_from"][1] and managers["valid_to"][1] is None
    assert relations(lance_uri, "works_at")["object"].to_list() == ["Tidewater Logistics"]


def test_rerun_changes_no_graph_row(root, lance_uri, instance):
    write_moves(root)
    res = make_resources(root, lance_uri)
    for day in ("2026-10-01", "2026-11-11", "2026-11-18"):
        consolidate(instance, res, day, tenant=ANN)
    store = store_for(lance_uri)

    def graph():
        return (store.relation_rows(ANN).sort("id"), store.entity_rows(ANN).sort("id"), store.merge_rows(ANN).sort("id"),
                supersession_rows(store.db, ANN).sort("id"))

    before = graph()
    result = consolidate(instance, res, "2026-11-11", tenant=ANN)
    for b, a in zip(before, graph()):
        assert b.equals(a)
    meta = metadata(result, "semantic_graph")
    assert meta["entities_new"] == 0 and before[3].height >= 1
    assert meta["supersessions_kept_undecided"] == 1  # same statements and relations: the records stand


def test_an_edited_transcript_is_read_again(root, lance_uri, instance):
    write_moves(root)
    res = make_resources(root, lance_uri)
    for day in ("2026-10-01", "2026-11-11"):
        consolidate(instance, res, day, tenant=ANN)
    path = root / "bot/sessions/ann/s2.jsonl"
    path.write_text(path.read_text().replace("Porto", "Braga"))
    result = consolidate(instance, res, "2026-11-11", tenant=ANN)
    assert relations(lance_uri, "lives_in")["object"].to_list() == ["Lisbon", "Braga"]
    meta = metadata(result, "semantic_graph")
    assert meta["supersessions_kept_undecided"] == 0


def test_alice_merges_into_alice_johnson_and_relations_follow(root, lance_uri, instance):
    tenant = "bot~alice"
    write(root, "bot/sessions/alice/s1.jsonl", jsonl(
        say("user", "I live in Oslo these days.", "2026-10-01T09:00:00Z"),
        say("assistant", "Thanks Alice, noted.", "2026-10-01T09:00:10Z"),
        completed="2026-10-01T09:01:00Z",
    ))
    write(root, "bot/sessions/alice/s2.jsonl", jsonl(
        say("user", "For the contract, my full name is Alice Johnson. Alice Johnson signs for the team.", "2026-10-02T09:00:00Z"),
        completed="2026-10-02T09:01:00Z",
    ))
    write(root, "bot/sessions/alice/s3.jsonl", jsonl(
        say("user", "I moved to Bergen in the summer.", "2026-10-03T09:00:00Z"),
        completed="2026-10-03T09:01:00Z",
    ))
    res = make_resources(root, lance_uri)
    consolidate(instance, res, "2026-10-01", tenant=tenant)
    result = consolidate(instance, res, "2026-10-02", tenant=tenant)
    assert metadata(result, "entity_dedup")["merged"] >= 1
    store = store_for(lance_uri)
    people = {r["name"]: r for r in store.entity_rows(tenant).iter_rows(named=True) if r["type"] == "PERSON"}
    assert "Alice Johnson" in people and "Alice" not in people
    assert "Alice" in people["Alice Johnson"]["aliases"]
    merges = store.merge_rows(tenant).filter(pl.col("status") == "merged")
    assert ("Alice", "Alice Johnson") in list(zip(merges["from_name"], merges["into_name"]))
    consolidate(instance, res, "2026-10-03", tenant=tenant)  # a later session resolves through the merge
    lives = store.relation_rows(tenant, "predicate = 'lives_in'").sort("valid_from")
    assert set(lives["subject_id"]) == {people["Alice Johnson"]["id"]}
    assert lives["object"].to_list() == ["Oslo", "Bergen"] and lives["valid_to"][0] is not None


def test_failing_extraction_is_recorded_and_blocks_nothing(root, lance_uri, instance, monkeypatch):
    write_moves(root)
    real = pipeline.extract

    def flaky(items, **kwargs):
        if any("Porto" in u.text for u in items):
            raise RuntimeError("parser crashed")
        return real(items, **kwargs)

    monkeypatch.setattr(pipeline, "extract", flaky)
    res = make_resources(root, lance_uri)
    consolidate(instance, res, "2026-10-01", tenant=ANN)
    result = consolidate(instance, res, "2026-11-11", tenant=ANN)
    assert result.success
    meta = metadata(result, "semantic_graph")
    assert meta["extraction_failures"] == 1 and "parser crashed" in meta["failures"]
    assert store_for(lance_uri).episode_rows(ANN).height == 2
    assert relations(lance_uri, "lives_in")["object"].to_list() == ["Lisbon"]
    monkeypatch.setattr(pipeline, "extract", real)
    consolidate(instance, res, "2026-11-11", tenant=ANN)
    assert relations(lance_uri, "lives_in")["object"].to_list() == ["Lisbon", "Porto"]
