"""Proves: what the pipeline builds from a statement a later one replaced inherits its label.

A session says the cutover is on 21 November and is consolidated and dreamed; a later session
moves it to 5 December. Through the real L0 index, typed-memory extraction, consolidation and
dreaming (Dagster, spaCy, all-MiniLM-L6-v2):
- the typed memory read from the replaced turn is replaced too (a record names it), so typed
  queries, the bulletin and the working memory leave it out, and the working memory marks the
  session that holds the replaced turn;
- the dreamed line written before the change is marked superseded in the document itself, and
  unmarked again if the change goes;
- for a present-tense question, neither the replaced session's episode nor the dreamed document
  outranks a unit holding the new date; both are labelled superseded;
- a memory restating another sentence of a replaced turn (one that still holds) keeps standing.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory_pipeline.config import Settings
from memory_pipeline.episodes.dreaming import mark_replaced
from memory_pipeline.memories.operations import TypedMemories
from memory_pipeline.memories.pipeline import ingest_tenant
from memory_pipeline.memories.service import MemoryService
from memory_pipeline.recall.search import search
from memory_pipeline.tenancy import Tenant
from memory_pipeline.text.statements import MEMORY, TURN, Statement
from memory_pipeline.timeline.records import SupersessionStore, inherited_records
from memory_pipeline.timeline.supersede import Supersession
from memory_pipeline_tests.helpers import make_resources, write
from memory_pipeline_tests.helpers.consolidation import consolidate, jsonl, run_dreaming, say
from memory_pipeline_tests.helpers.recall import ingest

pytestmark = pytest.mark.slow

ANN = Tenant("bot", "ann")
OLD_TURN = "bot/sessions/ann/s1.jsonl#L2"
NOW = datetime(2026, 11, 20, tzinfo=UTC)


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory, minilm):
    import dagster as dg

    base = tmp_path_factory.mktemp("derived")
    root, lance = base / "agents", str(base / "lancedb")
    instance = dg.DagsterInstance.ephemeral()
    resources = make_resources(root, lance, embedder="minilm")
    typed = TypedMemories.open(lance, minilm)
    write(root, "bot/sessions/ann/s1.jsonl", jsonl(
        say("user", "I love the new dashboard colours.", "2026-10-01T09:00:00Z", "t1"),
        say("user", "We scheduled the database cutover for Saturday 21 November.", "2026-10-01T09:01:00Z", "t2"),
        completed="2026-10-01T09:05:00Z",
    ))
    ingest_tenant(typed, root, ANN)
    assert consolidate(instance, resources, "2026-10-01", tenant=ANN.key).success
    assert run_dreaming(instance, resources, tenant=ANN.key).success
    dreamed = next((root / "bot/users/ann/memory/_system/dreaming").glob("*.md"))
    before = dreamed.read_text()
    write(root, "bot/sessions/ann/s2.jsonl", jsonl(
        say("user", "We pushed the database cutover from 21 November to Saturday 5 December.", "2026-11-18T08:52:00Z", "t1"),
        completed="2026-11-18T08:55:00Z",
    ))
    ingest_tenant(typed, root, ANN)
    assert consolidate(instance, resources, "2026-11-18", tenant=ANN.key).success
    ingest(root, lance, "minilm")  # the L0 index, the dreamed document included
    settings = Settings(root=str(root), lancedb_uri=lance, embedder="minilm")
    return root, lance, settings, dreamed, before


def test_the_typed_memory_of_a_replaced_turn_is_replaced_and_left_out(pipeline, minilm):
    root, lance, settings, _, _ = pipeline
    records = {r["old_ref"]: r for r in SupersessionStore(lance).rows(ANN.key).iter_rows(named=True)}
    assert records[OLD_TURN]["new_ref"] == "bot/sessions/ann/s2.jsonl#L1"
    service = MemoryService("bot", "ann", settings=settings, embedder=minilm)
    everything = service.query(include_superseded=True, max_results=50)
    from_old = [m for m in everything if m["source_ref"] == OLD_TURN]
    assert from_old, "the replaced turn gave a typed memory"
    assert all(f"facts/{m['id']}" in records and m["superseded"] for m in from_old)
    current = service.query(max_results=50)
    assert [m for m in current if m["source_ref"] == OLD_TURN] == []
    assert "for Saturday 21 November" not in service.bulletin("memory") + service.bulletin("context", now=NOW)
    context = service.context(now=NOW)
    assert all(item.source_ref != OLD_TURN for item in context.items)
    sessions = {item.source_ref.split("#")[0]: item for item in context.items if item.section == "sessions"}
    assert sessions["bot/sessions/ann/s1.jsonl"].superseded == "2026-11-18"
    assert sessions["bot/sessions/ann/s2.jsonl"].superseded is None
    assert "superseded 2026-11-18" in sessions["bot/sessions/ann/s1.jsonl"].line()


def test_the_dreamed_line_is_marked_in_the_document(pipeline):
    _, _, _, dreamed, before = pipeline
    old_lines = [line for line in before.splitlines() if f"· {OLD_TURN}]" in line]
    assert old_lines, "dreaming promoted the plan before it moved"
    after = dreamed.read_text()
    marked = [line for line in after.splitlines() if f"· {OLD_TURN}]" in line]
    assert all(" _(superseded 2026-11-18)_ [" in line for line in marked) and len(marked) == len(old_lines)
    others = [line for line in after.splitlines() if line.startswith("- ") and f"· {OLD_TURN}]" not in line]
    assert all("superseded" not in line for line in others)
    # Marking again changes nothing; once the change goes, the line reads as before.
    assert not mark_replaced(dreamed, {OLD_TURN: "2026-11-18"})
    assert mark_replaced(dreamed, {})
    assert dreamed.read_text() == before
    assert mark_replaced(dreamed, {OLD_TURN: "2026-11-18"}) and dreamed.read_text() == after


def test_no_derived_unit_outranks_the_new_date(pipeline, minilm):
    _, lance, settings, _, _ = pipeline
    results = search("When is the database cutover?", "bot", "ann", k=10, min_score=0.0, store=lance,
                     embedder=minilm, settings=settings)
    new = next(n for n, r in enumerate(results) if "5 December" in r.snippet)
    olds = [n for n, r in enumerate(results) if "21 November" in r.snippet and "5 December" not in r.snippet]
    assert olds and all(n > new for n in olds)
    kinds = {results[n].source for n in olds}
    assert {"episodes", "memory"} <= kinds  # the old session's episode and the dreamed document
    assert all(results[n].superseded for n in olds if results[n].source in ("episodes", "memory", "facts"))
    # A question about the past still finds the old date first among what the old session said.
    past = search("When was the database cutover originally planned?", "bot", "ann", k=10, min_score=0.0,
                  store=lance, embedder=minilm, settings=settings)
    assert any("21 November" in r.snippet for r in past[:3])


def _turn(line: int, text: str, day: int) -> Statement:
    path = "bot/sessions/ann/s1.jsonl" if day == 1 else "bot/sessions/ann/s2.jsonl"
    return Statement(f"{path}#L{line}", TURN, text, datetime(2026, 10, day, tzinfo=UTC), "ann", path, line)


def test_only_a_memory_restating_the_changed_sentence_inherits():
    old = _turn(2, "I live in Ghent. My sister Eva works at the bakery downstairs.", 1)
    new = _turn(1, "We moved to Leuven last week.", 9)
    memories = [
        Statement(f"facts/{mid}", MEMORY, text, old.said_at, "ann", old.path, old.line)
        for mid, text in (("home", "Ann lives in Ghent."), ("eva", "Ann's sister Eva works at the bakery downstairs."))
    ]
    whole = Supersession(old, new, 0.8, ("place",), ("moved",), "", old_sentence=old.text, new_sentence=new.text)
    part = Supersession(old, new, 0.8, ("place",), ("moved",), "", old_sentence="I live in Ghent.",
                        new_sentence=new.text)
    assert {r["old_ref"] for r in inherited_records(ANN.key, [whole], [old, new, *memories], NOW)} == {
        "facts/home", "facts/eva"}
    rows = inherited_records(ANN.key, [part], [old, new, *memories], NOW)
    assert [(r["old_ref"], r["new_ref"], r["old_kind"], r["old_sentence"]) for r in rows] == [
        ("facts/home", new.ref, MEMORY, None)]


def test_a_typed_memory_cites_the_turn_it_was_read_from(pipeline, minilm):
    _, lance, settings, *_ = pipeline
    results = search("Which dashboard colours does Ann love?", "bot", "ann", store=lance, embedder=minilm,
                     settings=settings, min_score=0.0, sources=["facts"])
    fact = next(r for r in results if "dashboard" in r.snippet)
    assert fact.citation.startswith("facts/") and fact.turn_ids == ["t1"]
