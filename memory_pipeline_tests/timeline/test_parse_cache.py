"""Proves: supersession's stored parses and vectors change no decision, and spare the work.

With the real spaCy model and all-MiniLM-L6-v2:
- every run of ``supersede_tenant`` (empty store, rerun, a session added, a session removed)
  stores exactly the records a fresh ``detect`` over the tenant's statements decides, with no
  stored parse or vector;
- claims read from stored parses equal claims read from fresh ones;
- a rerun with nothing changed keeps the records undecided (nothing parsed, read or embedded);
  one that decides again parses and embeds nothing but the typed memory, a new session only its
  own texts;
- a typed memory's words are never stored, and a removed session's texts leave the table;
- a parse packed with one packer for many documents is ``Doc.to_bytes``, byte for byte;
- a supersession run reusing the pipeline's recent parses (its memo) stores the same bytes and
  records as one parsing afresh;
- the typed-memory step keeps the parse of each turn's words: summaries, the graph and dreaming
  read them back without parsing (their statements, summaries and relations as from fresh parses),
  supersession keeps them while the turns are there and drops them with a removed session, and
  rows of the uncompressed kind of before are dropped.
"""

from __future__ import annotations

import zlib
from datetime import UTC, datetime

import polars as pl
import pyarrow as pa
import pytest

from memory_pipeline.consolidation.store import ConsolidationStore
from memory_pipeline.consolidation.supersession import SUPERSESSION_STEP, supersede_tenant
from memory_pipeline.knowledge.relations import extract, utterances
from memory_pipeline.memories.operations import TypedMemories
from memory_pipeline.memories.pipeline import ingest_tenant
from memory_pipeline.memories.store import TypedMemoryStore
from memory_pipeline.sources.transcripts import read_transcript
from memory_pipeline.store.tables import STATEMENT_PARSES, SUPERSESSIONS
from memory_pipeline.tenancy import Tenant
from memory_pipeline.text.statements import clean_text, forget_parses, parse, parsed_words, statements
from memory_pipeline.text.summarize import summarize_turns
from memory_pipeline.timeline.parse_cache import (
    _NOT_KEPT,
    DOC,
    ParseStore,
    StatementCache,
    doc_bytes,
    doc_packer,
    pipeline_identity,
    text_key,
)
from memory_pipeline.timeline.records import SupersessionStore, record_row
from memory_pipeline.timeline.statements import tenant_statements
from memory_pipeline.timeline.supersede import claims_of, detect
from memory_pipeline_tests.helpers import write
from memory_pipeline_tests.helpers.consolidation import RefusingPipeline, jsonl, say

pytestmark = pytest.mark.slow

TENANT = Tenant("bot", "ann")
NOW = datetime(2026, 12, 1, tzinfo=UTC)
MEMORY = "The team offsite is on 14 May in Lisbon."
SESSIONS = {
    "s1": [("My manager is Dana Whitfield.", "2026-10-01T09:00:00Z"),
           ("The database cutover is on Saturday 21 November.", "2026-10-01T09:01:00Z")],
    "s2": [("Dana is leaving. From 1 December my manager is Tomás Ribeiro.", "2026-11-18T08:50:00Z"),
           ("We pushed the database cutover from 21 November to Saturday 5 December.", "2026-11-18T08:52:00Z")],
    "s3": [("The team offsite moved to 4 June, in Porto now.", "2026-11-25T10:00:00Z"),
           ("The cutover slipped again, to Saturday 12 December.", "2026-11-25T10:01:00Z")],
}


def write_session(root, name: str) -> None:
    turns = [say("user", text, ts, f"t{n}") for n, (text, ts) in enumerate(SESSIONS[name], 1)]
    write(root, f"bot/sessions/ann/{name}.jsonl", jsonl(*turns, completed=SESSIONS[name][-1][1]))


def fresh_records(root, lance_uri, nlp, embedder) -> list[dict]:
    """What a computation from nothing decides (no stored parse or vector)."""
    memories = TypedMemoryStore(lance_uri, dim=embedder.dim).memory_rows(TENANT.key)
    pairs = detect(tenant_statements(root, TENANT, memories), nlp, embedder)
    # As the table types them (float32 scores, UTC times).
    table = pa.Table.from_pylist([record_row(TENANT.key, p, NOW) for p in pairs], schema=SUPERSESSIONS.schema())
    return [without_time(r) for r in pl.from_arrow(table).sort("id").iter_rows(named=True)]


def stored_records(lance_uri) -> list[dict]:
    return [without_time(r) for r in SupersessionStore(lance_uri).rows(TENANT.key).sort("id").iter_rows(named=True)]


def without_time(row: dict) -> dict:
    return {k: v for k, v in row.items() if k != "decided_at"}


def stored_docs(lance_uri) -> list[bytes]:
    """The stored parses, as spaCy's bytes."""
    return [zlib.decompress(data) for data in ParseStore(lance_uri).load(TENANT.key)[DOC].values()]


def test_stored_parses_decide_as_a_fresh_computation(tmp_path, minilm, nlp):
    root, lance_uri = tmp_path / "agents", str(tmp_path / "lancedb")
    write_session(root, "s1")
    write_session(root, "s2")
    TypedMemories.open(lance_uri, minilm).store_memory(
        TENANT, "event", MEMORY, occurred_at=datetime(2026, 9, 1, tzinfo=UTC), actor="test"
    )

    def run():
        report = supersede_tenant(root, lance_uri, TENANT, minilm, NOW, nlp=nlp)
        assert stored_records(lance_uri) == fresh_records(root, lance_uri, nlp, minilm)
        return report

    first = run()
    olds = {r["old_ref"]: r["new_ref"] for r in first.records}
    assert olds["bot/sessions/ann/s1.jsonl#L2"] == "bot/sessions/ann/s2.jsonl#L2"
    assert first.parsed > 1 and first.embedded > 1

    # Nothing changed: the records stand, undecided again.
    kept = run()
    assert kept.unchanged and (kept.parsed, kept.embedded) == (0, 0)
    assert sorted((r["old_ref"], r["new_ref"]) for r in kept.records) == sorted((r["old_ref"], r["new_ref"]) for r in first.records)

    # Decided again, a rerun reads every parse and vector back; only the typed memory is parsed again.
    ConsolidationStore(lance_uri).forget_built(TENANT.key, SUPERSESSION_STEP, [TENANT.key])
    rerun = run()
    assert not rerun.unchanged and (rerun.parsed, rerun.embedded) == (1, 0)
    assert rerun.records == first.records  # decision times kept

    # Claims read from stored parses are the claims of fresh parses.
    statements = tenant_statements(root, TENANT)
    cache = StatementCache(lance_uri, TENANT.key, nlp, minilm, lambda _: True)
    assert claims_of(statements, cache.parser) == claims_of(statements, nlp)
    assert cache.parser.parsed == 0

    # A new session: only its own texts are parsed; the whole set is decided again.
    write_session(root, "s3")
    grown = run()
    assert grown.parsed == 1 + len(SESSIONS["s3"])
    assert {r["old_ref"] for r in grown.records} > {r["old_ref"] for r in first.records}

    # A removed session's texts leave the table; the decisions follow what is left.
    (root / "bot/sessions/ann/s1.jsonl").unlink()
    run()
    docs = stored_docs(lance_uri)
    assert len(docs) == len(SESSIONS["s2"]) + len(SESSIONS["s3"])
    for data in docs:
        assert b"Dana Whitfield" not in data  # s1 only
        assert MEMORY.encode() not in data  # a typed memory is never stored


def test_one_packer_packs_each_parse_as_doc_to_bytes(nlp):
    texts = [text for turns in SESSIONS.values() for text, _ in turns]
    packer = doc_packer()
    for doc in nlp.pipe(texts):
        assert doc_bytes(doc, packer) == doc.to_bytes(exclude=_NOT_KEPT)


def test_supersession_reusing_recent_parses_stores_the_same(tmp_path, minilm, nlp):
    """Texts the pipeline parsed moments before (the summaries and the graph of a consolidation
    run) come from its memo: the same stored parses and the same records as parsing afresh."""
    root = tmp_path / "agents"
    for name in SESSIONS:
        write_session(root, name)
    statements = tenant_statements(root, TENANT)
    stored = {}
    for label in ("fresh", "recent"):
        forget_parses()
        if label == "recent":
            parse([s.text for s in statements], nlp)
        lance_uri = str(tmp_path / label)
        cache = StatementCache(lance_uri, TENANT.key, nlp, minilm, lambda _: True)
        pairs = detect(statements, cache.parser, cache.embedder)
        cache.save()
        stored[label] = (sorted(ParseStore(lance_uri).load(TENANT.key)[DOC].items()), [record_row(TENANT.key, p, NOW) for p in pairs])
    assert stored["fresh"][1] and stored["fresh"] == stored["recent"]


def test_each_turn_is_parsed_once_for_every_step(tmp_path, minilm, nlp):
    root, lance_uri = tmp_path / "agents", str(tmp_path / "lancedb")
    for name in ("s1", "s2"):
        write_session(root, name)
    typed = TypedMemories.open(lance_uri, minilm)
    transcripts = {name: read_transcript(root / f"bot/sessions/ann/{name}.jsonl").turns for name in ("s1", "s2")}
    identity = pipeline_identity(nlp)

    def turn_keys(*names):
        return {text_key(identity, parsed_words(clean_text(t.content))) for n in names for t in transcripts[n]}

    forget_parses()
    ingest_tenant(typed, root, TENANT, now=NOW)
    assert turn_keys("s1", "s2") <= set(ParseStore(lance_uri).load(TENANT.key)[DOC])

    forget_parses()  # a new process: nothing in the memo
    kept = ParseStore(lance_uri).parser(TENANT.key, RefusingPipeline(nlp), keep=False)
    for turns in transcripts.values():
        assert statements(turns, "ann", kept, plural=True) == statements(turns, "ann", nlp, plural=True)
        assert summarize_turns(turns, (), "ann", kept) == summarize_turns(turns, (), "ann", nlp)
        assert extract(utterances(turns, (), "ann"), nlp=kept) == extract(utterances(turns, (), "ann"), nlp=nlp)
    assert kept.parsed == 0 and kept.new == {}

    # A row of the uncompressed kind of before (which no run reads) under a turn's key: it goes alone.
    old = {"id": "old", "tenant": TENANT.key, "kind": "doc", "key": min(turn_keys("s2")), "data": b"x"}
    ParseStore(lance_uri).upsert(STATEMENT_PARSES, [old])
    supersede_tenant(root, lance_uri, TENANT, minilm, NOW, nlp=nlp)
    stored = ParseStore(lance_uri).load(TENANT.key)
    assert turn_keys("s1", "s2") <= set(stored[DOC]) and "doc" not in stored

    # A removed session's turns leave the table with the next run of both steps.
    (root / "bot/sessions/ann/s1.jsonl").unlink()
    ingest_tenant(typed, root, TENANT, now=NOW)
    supersede_tenant(root, lance_uri, TENANT, minilm, NOW, nlp=nlp)
    left = set(ParseStore(lance_uri).load(TENANT.key)[DOC])
    assert turn_keys("s2") <= left and not turn_keys("s1") & left
