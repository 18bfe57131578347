"""Proves: no secret reaches storage. Realistic fake credentials go through every stage (flush,
L0, episodes, semantic graph, dedup, dreaming, typed memories, L0 again for the dreamed files,
MCP writes): 13 formats in the notes, transcripts and flushed messages of four tenants, and the
70+ formats of ``secret_corpus`` planted in every field a source has (note text, file, folder and
session names, message content, role, turn id, line type, compaction summary, extra line fields,
flushed messages, MCP content, reasoning, skip reason and memory type).

Afterwards no string or binary cell of any LanceDB table holds one (a kept spaCy parse read
through its compression), nor do the raw bytes of anything the pipeline wrote: the LanceDB folder (data files, old versions, indices), the Dagster instance (run
and event storage, where metadata previews live), the IO manager's hand-off files, the dreamed
files and the flushed note. A canary word stored beside the secrets is found by the same byte
scan, which proves the scan can see stored text at all (LanceDB does not compress it away).
Each stage reports how many secrets it redacted, and ``memory_get`` and search return scrubbed
text even though the files they read still hold the secrets.
"""

from __future__ import annotations

import zlib

import pyarrow as pa
import pytest

from memory_pipeline.embedding import HashEmbedder
from memory_pipeline.l0.store import ChunkIndex
from memory_pipeline.orchestration.runs import materialization_metadata
from memory_pipeline.recall.get import get
from memory_pipeline.recall.search import search
from memory_pipeline_tests.helpers.hardening import (
    CANARY,
    CORPUS,
    SECRETS,
    corpus_needles,
    files_containing,
    stage_metadata,
)

pytestmark = pytest.mark.slow


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, bytes):  # a kept parse (compressed) or a vector
        try:
            value = zlib.decompress(value)
        except zlib.error:
            pass
        return [value.decode("utf-8", "replace")]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    return []


NEEDLES = {**SECRETS, **corpus_needles()}


def _runs(results: dict) -> list:
    return [r for stage, rs in results.items() if stage != "mcp" for r in rs]


def test_every_stage_ran_and_redacted(leaky):
    *_, results = leaky
    assert len(CORPUS) >= 60
    assert _runs(results) and all(r.success for r in _runs(results))
    meta = stage_metadata(_runs(results))
    for asset in ("memory_chunks", "episodic_summaries", "semantic_graph", "typed_memories"):
        assert meta[asset]["secrets_redacted"] > 0, asset
    assert meta["dreaming"]["files_written"] >= 2
    assert meta["typed_memories"]["memories_written"] > 0
    assert meta["semantic_graph"]["relations_written"] >= 0


def test_no_table_cell_holds_a_secret(leaky):
    _, _, lance_uri, _ = leaky
    store = ChunkIndex(lance_uri)
    names = store.table_names()
    assert {"chunks", "files", "episodes", "entities", "relations", "memories", "memory_audit"} <= set(names)
    placeholders: dict[str, int] = {}
    for name in names:
        table: pa.Table = store.db.open_table(name).to_arrow()
        for column in table.column_names:
            for cell in _strings(table.column(column).to_pylist()):
                for kind, secret in NEEDLES.items():
                    assert secret not in cell, f"{kind} secret stored in {name}.{column}"
                placeholders[name] = placeholders.get(name, 0) + cell.count("[REDACTED:")
    assert sum(placeholders.values()) > 100  # the typed placeholders are what is stored instead
    assert placeholders["statement_parses"] > 0  # the scan reads the kept parses' words


def test_no_byte_of_a_secret_on_disk(leaky):
    base, root, _, _ = leaky
    found = files_containing(base, {**NEEDLES, "canary": CANARY}, skip=root)
    assert found.pop("canary", None), "the canary must be visible to the byte scan"
    assert found == {}
    # What was scanned: LanceDB and the Dagster instance (runs, event logs, compute logs) exist and
    # hold bytes (the IO manager's folder too, when a step hands a value through it).
    scanned = [p for p in base.rglob("*") if p.is_file() and not p.is_relative_to(root)]
    assert any("lancedb" in p.parts for p in scanned)
    assert any(p.suffix == ".db" for p in scanned)  # SQLite run and event storage
    assert any("compute_logs" in p.parts for p in scanned)


def test_mcp_writes_were_stored_scrubbed(leaky):
    *_, results = leaky
    outcomes = results["mcp"]
    stored = [error for name, error in outcomes if name == "memory_graph_store"]
    assert stored.count(False) >= len(CORPUS)  # every line was stored (scrubbed)
    assert stored.count(True) >= 1  # a token as the memory type is refused
    assert all(not error for name, error in outcomes if name == "memory_graph_skip")


def test_secret_names_are_skipped_with_a_scrubbed_reason(leaky):
    *_, results = leaky
    skipped, folders = [], 0
    for result in results["l0"]:
        for metadata in materialization_metadata(result, numeric_only=False).values():
            if "skipped" in metadata:
                skipped.append(str(metadata["skipped"]))
                folders = max(folders, metadata["tenant_folders_skipped"])
    text = "\n".join(skipped)
    # the note and the session named after a token, and the user folder named after one
    assert text.count("the name holds a secret") >= 3, text[:2000]
    assert folders == 1
    assert not [k for k, secret in NEEDLES.items() if secret in text]


def test_pipeline_written_files_hold_no_secret(leaky):
    _, root, _, _ = leaky
    dreamed = list(root.rglob("_system/dreaming/*.md"))
    flushed = root / "ops-bot/users/alice/memory/2026-11-06.md"
    assert len(dreamed) >= 2 and flushed.exists()
    for path in [*dreamed, flushed]:
        text = path.read_text()
        leaked = [kind for kind, secret in NEEDLES.items() if secret in text]
        assert not leaked, f"{path.relative_to(root)} holds {leaked}"
    assert "OpenAI key" in flushed.read_text()  # the sentence is kept, its key is not


def test_get_and_search_return_scrubbed_text(leaky):
    _, root, lance_uri, _ = leaky
    source = root / "ops-bot/users/alice/MEMORY.md"
    assert SECRETS["openai"] in source.read_text()  # the file itself is left as written
    result = get("ops-bot/users/alice/MEMORY.md", agent="ops-bot", user="alice", root=root)
    assert len(result.lines) == len(source.read_text().splitlines())
    assert "[REDACTED:" in result.text
    session = get("ops-bot/sessions/alice/s0.jsonl", agent="ops-bot", user="alice", root=root)
    for text in (result.text, session.text):
        assert not [k for k, s in SECRETS.items() if s in text]
    for query in ("AWS key OpenAI key rotate", "private key database password", "Slack Stripe token"):
        hits = search(query, "ops-bot", "alice", store=lance_uri, embedder=HashEmbedder(), k=20, min_score=0.0)
        assert hits
        for hit in hits:
            assert not [k for k, s in SECRETS.items() if s in hit.snippet]
