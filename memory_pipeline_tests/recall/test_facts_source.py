"""Typed memories are recalled by ``search`` as the ``facts`` source: a memory stored for alice is
found by alice's search (and through the MCP ``memory_search`` tool) and never by bob's; an
updated memory reads its new text only; a forgotten memory is not recalled; a plan that a later
statement moved is recalled after the one that moved it, labelled with the date it was replaced.
Each test stores memories through the typed memories' own operations into a copy of the indexed
workspace, so search reads what the tools write.
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime

import anyio
import pytest

from memory_pipeline.memories.operations import TypedMemories
from memory_pipeline.recall.search import search
from memory_pipeline.tenancy import Tenant
from memory_pipeline_tests.helpers.recall import recall_settings

ALICE = Tenant("support-bot", "alice")
BOB = Tenant("support-bot", "bob")
LAPTOP = "Alice's work laptop is a ThinkPad X1 Carbon with the serial TPX-4471"


@pytest.fixture
def db(indexed, tmp_path):
    """A private copy of the indexed workspace's database, and settings that read it."""
    root, lance_uri = indexed
    copy = str(tmp_path / "lancedb")
    shutil.copytree(lance_uri, copy)
    return copy, recall_settings(root, copy)


@pytest.fixture
def typed(db, embedder) -> TypedMemories:
    return TypedMemories.open(db[0], embedder)


def facts(query: str, tenant: Tenant, db, embedder, **kwargs) -> list:
    lance_uri, settings = db
    results = search(query, tenant.agent_id, tenant.user_id, store=lance_uri, embedder=embedder,
                     settings=settings, min_score=0, k=20, **kwargs)
    return [r for r in results if r.source == "facts"]


def test_a_users_typed_memory_is_found_by_that_user_only(typed, db, embedder):
    stored = typed.store_memory(ALICE, "fact", LAPTOP)
    results = facts("which laptop does alice use", ALICE, db, embedder)
    assert [(r.citation, r.path, r.snippet, r.tenant, r.ids) for r in results] == [
        (f"facts/{stored['id']}", f"facts/{stored['id']}", LAPTOP, ALICE.key, [stored["id"]])
    ]
    assert results[0].parts["vector"] > 0 and results[0].parts["text"] > 0  # both channels found it
    # Among all sources of a default search, and only in alice's scope.
    everything = search("ThinkPad laptop serial", "support-bot", "alice", store=db[0], embedder=embedder, settings=db[1], min_score=0, k=20)
    assert f"facts/{stored['id']}" in [r.citation for r in everything]
    for reader in (BOB, Tenant("support-bot")):
        other = search("ThinkPad laptop serial", reader.agent_id, reader.user_id, store=db[0], embedder=embedder, settings=db[1], min_score=0, k=20)
        assert not [r for r in other if "ThinkPad" in r.snippet], reader


def test_an_updated_memory_reads_its_new_text_only(typed, db, embedder):
    stored = typed.store_memory(ALICE, "preference", "Prefers invoices as PDF attachments")
    assert [r.snippet for r in facts("invoices PDF attachments", ALICE, db, embedder)] == ["Prefers invoices as PDF attachments"]
    typed.update_memory(ALICE, stored["id"], content="Prefers invoices as a link to the billing portal", reason="changed her mind")
    for query in ("invoices PDF attachments", "invoices link billing portal"):
        results = facts(query, ALICE, db, embedder)
        assert [(r.citation, r.snippet) for r in results] == [
            (f"facts/{stored['id']}", "Prefers invoices as a link to the billing portal")
        ], query


def test_a_forgotten_memory_is_not_recalled(typed, db, embedder):
    kept = typed.store_memory(ALICE, "fact", "Alice's office is on the fourth floor of building C")
    gone = typed.store_memory(ALICE, "fact", "Alice's door code for building C is 4471")
    assert {r.ids[0] for r in facts("building C", ALICE, db, embedder)} == {kept["id"], gone["id"]}
    typed.forget_memory(ALICE, gone["id"], reason="asked to forget the door code")
    results = facts("building C door code", ALICE, db, embedder)
    assert [r.ids for r in results] == [[kept["id"]]]
    assert not any("4471" in r.snippet for r in search("door code 4471", "support-bot", "alice", store=db[0], embedder=embedder, settings=db[1], min_score=0, k=20))


@pytest.mark.slow
def test_a_plan_a_later_statement_moved_comes_after_it_labelled(indexed, typed, db, embedder, minilm, nlp):
    from memory_pipeline.consolidation.supersession import supersede_tenant

    said = datetime(2026, 11, 2, 9, tzinfo=UTC)
    old = typed.store_memory(ALICE, "event", "Target cutover is Saturday 21 November",
                             occurred_at=said, happens_at=datetime(2026, 11, 21, 10, tzinfo=UTC))
    mover = typed.store_memory(ALICE, "event", "We pushed the cutover from 21 November to 28 November",
                               occurred_at=datetime(2026, 11, 9, 9, tzinfo=UTC), happens_at=datetime(2026, 11, 28, 10, tzinfo=UTC))
    report = supersede_tenant(indexed[0], db[0], ALICE, minilm, datetime(2026, 11, 22, tzinfo=UTC), nlp=nlp)
    assert [(r["old_ref"], r["new_ref"]) for r in report.records] == [(f"facts/{old['id']}", f"facts/{mover['id']}")]
    results = facts("when is the cutover", ALICE, db, embedder)
    assert [r.ids[0] for r in results][:2] == [mover["id"], old["id"]]
    assert (results[0].superseded, results[1].superseded) == (None, {"by": f"facts/{mover['id']}", "at": "2026-11-09"})
    assert (results[0].when, results[1].when) == ("2026-11-09", "2026-11-02")
    # Asked about the past, the old plan keeps its own rank (it matches the question best).
    assert facts("what was the cutover date originally", ALICE, db, embedder)[0].ids == [old["id"]]


def test_facts_alone_without_an_l0_index(tmp_path, embedder):
    """A database holding only typed memories is searchable; ``sources=["facts"]`` selects them."""
    lance_uri = str(tmp_path / "lancedb")
    typed = TypedMemories.open(lance_uri, embedder)
    stored = typed.store_memory(ALICE, "goal", "Finish the migration to the new billing provider by March")
    settings = recall_settings(tmp_path, lance_uri)
    results = search("billing provider migration", "support-bot", "alice", sources=["facts"], store=lance_uri,
                     embedder=embedder, settings=settings, min_score=0)
    assert [r.citation for r in results] == [f"facts/{stored['id']}"]
    assert search("billing provider migration", "support-bot", "bob", sources=["facts"], store=lance_uri,
                  embedder=embedder, settings=settings, min_score=0) == []


def test_mcp_memory_search_finds_what_memory_graph_store_wrote(indexed, db):
    from memory_pipeline.mcp_server import build_server

    lance_uri, settings = db

    def call(server, name: str, args: dict):
        result = anyio.run(server.call_tool, name, args)
        assert not result.is_error, result
        answer = json.loads(result.content[0].text)
        return answer["results"] if "results" in answer else answer

    alice = build_server("support-bot", "alice", settings=settings)
    stored = call(alice, "memory_graph_store", {"memory_type": "fact", "content": LAPTOP})
    found = call(alice, "memory_search", {"query": "which laptop does alice use", "k": 10})
    assert [(r["source"], r["citation"], r["snippet"]) for r in found if r["source"] == "facts"] == [
        ("facts", f"facts/{stored['id']}", LAPTOP)
    ]
    bob = build_server("support-bot", "bob", settings=settings)
    assert not [r for r in call(bob, "memory_search", {"query": "which laptop does alice use", "k": 10}) if "ThinkPad" in r["snippet"]]


@pytest.mark.slow
def test_facts_with_the_real_embedder(tmp_path):
    """With all-MiniLM-L6-v2 a paraphrase finds the memory by meaning, not by shared words."""
    from memory_pipeline.embedding import MiniLMEmbedder

    model = MiniLMEmbedder()
    lance_uri = str(tmp_path / "lancedb")
    typed = TypedMemories.open(lance_uri, model)
    dog = typed.store_memory(ALICE, "fact", "Alice adopted a golden retriever puppy named Biscuit")
    typed.store_memory(ALICE, "preference", "Prefers meetings after 10am")
    typed.store_memory(BOB, "fact", "Bob has a cat called Pixel")
    settings = recall_settings(tmp_path, lance_uri).model_copy(update={"embedder": "minilm"})
    results = search("what pet does she have", "support-bot", "alice", sources=["facts"], store=lance_uri,
                     embedder=model, settings=settings, min_score=0, k=3)
    assert results[0].citation == f"facts/{dog['id']}"
    assert all(r.tenant == ALICE.key for r in results)
    assert "Pixel" not in " ".join(r.snippet for r in results)




def test_a_memory_read_from_an_undated_note_has_no_time(tmp_path, embedder):
    """A profile line says nothing of when: its typed memory shows neither the day it was extracted
    nor its file's time, which says only when the file was last edited."""
    import os

    from memory_pipeline.memories.pipeline import ingest_tenant
    from memory_pipeline_tests.helpers import write
    from memory_pipeline_tests.helpers.recall import ingest

    root, lance_uri = tmp_path / "agents", str(tmp_path / "lancedb")
    profile = write(root, "support-bot/users/alice/MEMORY.md", "# Profile\n\n- Alice lives in Lisbon and works at Tidewater.\n")
    written = datetime(2026, 1, 5, 12, tzinfo=UTC).timestamp()
    os.utime(profile, (written, written))
    ingest(root, lance_uri)
    ingest_tenant(TypedMemories.open(lance_uri, embedder), root, ALICE)
    found = facts("Where does Alice live?", ALICE, (lance_uri, recall_settings(root, lance_uri)), embedder)
    assert [(r.snippet, r.when) for r in found] == [("Alice lives in Lisbon and works at Tidewater.", None)]


def test_typed_memories_are_ordered_by_their_weight_and_kept_by_their_score(typed, db, embedder):
    stored = typed.store_memory(ALICE, "fact", LAPTOP)
    lance_uri, settings = db
    citation = f"facts/{stored['id']}"

    def found(config, min_score=0.0):
        results = search("which laptop does alice use", "support-bot", "alice", store=lance_uri, embedder=embedder,
                         settings=settings, config=config, min_score=min_score, k=20)
        return next((r for r in results if r.citation == citation), None)

    weighted = found(settings.recall)
    plain = found(settings.recall.model_copy(update={"source_weights": {}}))
    assert weighted.parts["weight"] == settings.recall.source_weights["facts"] < 1 and plain.parts["weight"] == 1
    assert weighted.parts["ranked"] == pytest.approx(plain.parts["ranked"] * weighted.parts["weight"], abs=1e-5)
    # The minimum score is held to the score before the weight: between the two, the memory stays.
    between = (weighted.parts["ranked"] + plain.parts["ranked"]) / 2
    assert found(settings.recall, min_score=between) is not None
    assert found(settings.recall, min_score=plain.parts["ranked"] + 0.01) is None
