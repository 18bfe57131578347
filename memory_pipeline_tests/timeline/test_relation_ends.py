"""Proves: a relation of the graph ends by a supersession record, like any statement, and every
reader shows the record's date.

- The rule, on plain rows: a later single-valued relation of another object ends it when that one
  starts; a later statement replacing its sentence ends it when the statement starts holding; the
  earlier of the two wins, never before the relation began; a rerun keeps the decision time; a
  statement ends a state read from its sentence (where one lives), not a deed (what one bought).
- With the real spaCy model and all-MiniLM-L6-v2, through Dagster: "I live in Boston, in a flat
  near the harbour. I work at Acme Robotics as a designer." then "Our flat is in Denver now, we
  left Boston in May." (which yields no relation of its own) ends the residence on the day of the
  move and leaves the job open. The stored relation, its record, the knowledge-graph search the
  MCP tool answers with, the run's metadata and check, and the dreamed file show one date, in
  either consolidation order and on a rerun; the check fails on a valid_to its record does not give.
- A typed memory that ended a relation, once forgotten, lets the relation stand again.
"""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from memory_pipeline.config import Settings
from memory_pipeline.consolidation.checks import check_relations
from memory_pipeline.consolidation.supersession import supersede_tenant
from memory_pipeline.memories.operations import TypedMemories
from memory_pipeline.memories.service import MemoryService
from memory_pipeline.tenancy import Tenant
from memory_pipeline.text.statements import TURN, Statement
from memory_pipeline.timeline.records import SupersessionStore
from memory_pipeline.timeline.relation_ends import RELATION, End, relation_records, relation_ref, replaced_by_statements
from memory_pipeline.timeline.supersede import Supersession
from memory_pipeline_tests.helpers import make_resources, write
from memory_pipeline_tests.helpers.consolidation import consolidate, jsonl, metadata, run_dreaming, say, store_for


def at(month: int, day: int) -> datetime:
    return datetime(2026, month, day, 9, tzinfo=UTC)


def rel(rid: str, obj: str, start: datetime | None, predicate: str = "lives_in", single: bool = True) -> dict:
    return {
        "id": rid, "subject_id": "ann", "predicate": predicate, "object_id": None, "object": obj,
        "valid_from": start, "said_at": start, "single_valued": single, "confidence": 0.85,
    }


def test_the_earlier_end_wins_and_never_before_the_start():
    moved = End(at(6, 10), "s2.jsonl#L1", "turn", 0.6, ("name",), ("now",), "llm")
    rows = [rel("lisbon", "Lisbon", at(1, 5)), rel("porto", "Porto", at(9, 1)), rel("acme", "Acme", at(1, 5), "works_at"),
            rel("later", "Faro", at(12, 1), predicate="works_as")]
    found = relation_records("t", rows, {"lisbon": moved, "later": moved}, {}, at(11, 22))
    by_old = {r["old_ref"]: r for r in found}
    assert sorted(by_old) == [relation_ref("later"), relation_ref("lisbon")]  # Porto and Acme still hold
    lisbon = by_old[relation_ref("lisbon")]
    assert (lisbon["new_ref"], lisbon["new_kind"], lisbon["new_said_at"], lisbon["decided_by"], lisbon["old_kind"]) == (
        "s2.jsonl#L1", "turn", at(6, 10), "llm", RELATION)
    # Replaced before it began: it never held (an empty interval, not one ending before it starts).
    assert by_old[relation_ref("later")]["new_said_at"] == at(12, 1)
    # Without the statement, Porto's start ends Lisbon, by the graph's own rule.
    alone = relation_records("t", rows, {}, {}, at(11, 22))
    assert [(r["old_ref"], r["new_ref"], r["new_said_at"], r["decided_by"]) for r in alone] == [
        (relation_ref("lisbon"), relation_ref("porto"), at(9, 1), "extractive")]
    # A tie goes to the graph's rule; a rerun keeps when it was decided.
    tie = End(at(9, 1), "s3.jsonl#L1", "turn", 0.7, (), (), "extractive")
    first = relation_records("t", rows[:2], {"lisbon": tie}, {}, at(11, 22))
    again = relation_records("t", rows[:2], {"lisbon": tie}, {r["id"]: r for r in first}, at(11, 30))
    assert first == again and first[0]["new_ref"] == relation_ref("porto")


@pytest.mark.slow
def test_a_statement_ends_the_state_read_from_its_sentence_not_a_deed(nlp, minilm):
    path = "bot/sessions/ann/s1.jsonl"
    said = "I live in Boston, in a flat near the harbour."
    old = Statement(f"{path}#L1", TURN, said, at(3, 2), "ann", path, 1)
    new = Statement("bot/sessions/ann/s2.jsonl#L1", TURN, MOVE, at(6, 10), "ann", "bot/sessions/ann/s2.jsonl", 1)
    pair = Supersession(old, new, 0.6, ("name",), ("now",), "flat", "llm")

    def relation(rid, predicate, rule, single):
        return {"id": rid, "path": path, "line": 1, "evidence": said, "predicate": predicate, "rule": rule,
                "single_valued": single}

    rows = [relation("home", "lives_in", "residence", True), relation("deed", "bought", "action", False)]
    ends = replaced_by_statements(rows, [pair], nlp, minilm, ZoneInfo("UTC"))
    assert ends == {"home": End(at(6, 10), new.ref, TURN, 0.6, ("name",), ("now",), "llm")}


ANN = "bot~ann"
MOVE = "Our flat is in Denver now, we left Boston in May."


def write_ann(root, move: bool = True):
    write(root, "bot/sessions/ann/s1.jsonl", jsonl(
        say("user", "I live in Boston, in a flat near the harbour. I work at Acme Robotics as a designer.",
            "2026-03-02T09:00:00Z", "t1"),
        completed="2026-03-02T09:05:00Z",
    ))
    if move:
        write(root, "bot/sessions/ann/s2.jsonl", jsonl(
            say("user", MOVE, "2026-06-10T18:00:00Z", "t1"),
            completed="2026-06-10T18:05:00Z",
        ))


def graph(lance_uri) -> dict[str, tuple]:
    rows = store_for(lance_uri, "minilm").relation_rows(ANN).iter_rows(named=True)
    return {r["predicate"]: (r["object"], r["valid_to"], r["id"]) for r in rows if r["predicate"] in ("lives_in", "works_at")}


def records(lance_uri) -> dict[str, dict]:
    return {r["old_ref"]: r for r in SupersessionStore(lance_uri).rows(ANN).iter_rows(named=True)}


@pytest.mark.slow
def test_a_later_statement_ends_the_relation_read_from_its_sentence(tmp_path, instance, minilm):
    root = tmp_path / "agents"
    write_ann(root)
    moved = datetime(2026, 6, 10, 18, tzinfo=UTC)
    found = []
    for n, order in enumerate([("2026-03-02", "2026-06-10"), ("2026-06-10", "2026-03-02")]):
        lance_uri = str(tmp_path / f"lancedb{n}")
        resources = make_resources(root, lance_uri, embedder="minilm")
        results = [consolidate(instance, resources, day, tenant=ANN) for day in order]
        assert all(r.success for r in results)
        assert all(c.passed for r in results for c in r.get_asset_check_evaluations())
        relations = graph(lance_uri)
        assert relations["lives_in"][:2] == ("Boston", moved)
        assert relations["works_at"][:2] == ("Acme Robotics", None)  # same turn, another sentence
        record = records(lance_uri)[relation_ref(relations["lives_in"][2])]
        assert (record["new_ref"], record["new_kind"], record["new_said_at"], record["decided_by"]) == (
            "bot/sessions/ann/s2.jsonl#L1", "turn", moved, "extractive")
        assert relation_ref(relations["works_at"][2]) not in records(lance_uri)
        tables = [metadata(r, "semantic_graph")["closed"] for r in results]
        assert sum("| Boston | 2026-06-10 |" in t for t in tables) == 1
        found.append(sorted((k, v["new_ref"], v["new_said_at"]) for k, v in records(lance_uri).items()))
    assert found[0] == found[1]

    before = records(lance_uri)
    assert consolidate(instance, resources, "2026-06-10", tenant=ANN).success
    assert records(lance_uri) == before  # decision times included

    # The check reads the record: a valid_to written past it (here, the job closed) fails it.
    store = store_for(lance_uri, "minilm")
    assert check_relations(store, ANN)[0]
    job = store.relation_rows(ANN, "predicate = 'works_at'").to_dicts()[0]
    store.upsert_relations([{**job, "valid_to": moved}])
    passed, details = check_relations(store, ANN)
    assert not passed and details["valid_to_not_its_record"] == [job["id"]]
    store.upsert_relations([job])

    settings = Settings(root=str(root), lancedb_uri=lance_uri, embedder="minilm")
    service = MemoryService("bot", "ann", settings=settings, embedder=minilm)
    history = service.knowledge("Ann", include_history=True)["relations"]
    boston = next(r for r in history if r["object"] == "Boston")
    assert (boston["valid_from"][:10], boston["valid_to"][:10], boston["valid"]) == ("2026-03-02", "2026-06-10", False)
    now = {(r["predicate"], r["object"]) for r in service.knowledge("Ann")["relations"]}
    assert ("works_at", "Acme Robotics") in now and ("lives_in", "Boston") not in now
    assert run_dreaming(instance, resources, tenant=ANN).success
    dreamed = next((root / "bot" / "users" / "ann" / "memory" / "_system" / "dreaming").glob("*.md")).read_text()
    assert "lives in: Boston (2026-03-02 to 2026-06-10)" in dreamed
    assert "works at: Acme Robotics (since 2026-03-02)" in dreamed


@pytest.mark.slow
def test_forgetting_the_memory_that_ended_a_relation_lets_it_stand(tmp_path, instance, minilm, nlp):
    root, lance_uri, tenant = tmp_path / "agents", str(tmp_path / "lancedb"), Tenant("bot", "ann")
    write_ann(root, move=False)
    assert consolidate(instance, make_resources(root, lance_uri, embedder="minilm"), "2026-03-02", tenant=ANN).success
    assert graph(lance_uri)["lives_in"][1] is None
    memories = TypedMemories.open(lance_uri, minilm)
    move = memories.store_memory(tenant, "event", MOVE, occurred_at=at(6, 10), actor="test")
    supersede_tenant(root, lance_uri, tenant, minilm, at(6, 11), nlp=nlp)
    boston = graph(lance_uri)["lives_in"]
    assert boston[1] == at(6, 10)
    assert records(lance_uri)[relation_ref(boston[2])]["new_ref"] == f"facts/{move['id']}"

    memories.forget_memory(tenant, move["id"], reason="said by mistake", actor="test")
    assert graph(lance_uri)["lives_in"][1] is None
    assert relation_ref(boston[2]) not in records(lance_uri)
    supersede_tenant(root, lance_uri, tenant, minilm, at(6, 12), nlp=nlp)  # consolidation agrees
    assert graph(lance_uri)["lives_in"][1] is None
