"""No secret reaches storage: a corpus of realistic fake credentials (AWS, OpenAI, Anthropic,
GitHub, Slack, Stripe, Google, JWT, bearer token, password in a URL, password assignment, PEM
private key) in Markdown notes, transcripts and flushed messages goes through every stage (flush,
L0, episodes, semantic graph, dedup, dreaming, typed memories, L0 again for the dreamed files).

Afterwards no string cell of any LanceDB table holds one, nor do the raw bytes of anything the
pipeline wrote: the LanceDB folder (data files, old versions, indices), the Dagster instance (run
and event storage, where metadata previews live), the IO manager's hand-off files, the dreamed
files and the flushed note. A canary word stored beside the secrets is found by the same byte
scan, which proves the scan can see stored text at all (LanceDB does not compress it away).
Each stage reports how many secrets it redacted, and ``memory_get`` and search return scrubbed
text even though the files they read still hold the secrets.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from memory_pipeline.embedding import HashEmbedder
from memory_pipeline.l0.store import MemoryStore
from memory_pipeline.recall.get import get
from memory_pipeline.recall.search import search
from memory_pipeline_tests.hardening.conftest import CANARY, SECRETS, files_containing, stage_metadata

pytestmark = pytest.mark.slow


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    return []


def test_every_stage_ran_and_redacted(leaky):
    *_, results = leaky
    assert all(r.success for rs in results.values() for r in rs)
    meta = stage_metadata(r for rs in results.values() for r in rs)
    for asset in ("memory_chunks", "episodic_summaries", "semantic_graph", "typed_memories"):
        assert meta[asset]["secrets_redacted"] > 0, asset
    assert meta["dreaming"]["files_written"] >= 2
    assert meta["typed_memories"]["memories_written"] > 0
    assert meta["semantic_graph"]["relations_written"] >= 0


def test_no_table_cell_holds_a_secret(leaky):
    _, _, lance_uri, _ = leaky
    store = MemoryStore(lance_uri)
    names = store.table_names()
    assert {"chunks", "files", "episodes", "entities", "relations", "memories", "memory_audit"} <= set(names)
    placeholders = 0
    for name in names:
        table: pa.Table = store.db.open_table(name).to_arrow()
        for column in table.column_names:
            for cell in _strings(table.column(column).to_pylist()):
                for kind, secret in SECRETS.items():
                    assert secret not in cell, f"{kind} secret stored in {name}.{column}"
                placeholders += cell.count("[REDACTED:")
    assert placeholders > 100  # the typed placeholders are what is stored instead


def test_no_byte_of_a_secret_on_disk(leaky):
    base, root, _, _ = leaky
    found = files_containing(base, {**SECRETS, "canary": CANARY}, skip=root)
    assert found.pop("canary", None), "the canary must be visible to the byte scan"
    assert found == {}


def test_pipeline_written_files_hold_no_secret(leaky):
    _, root, _, _ = leaky
    dreamed = list(root.rglob("_system/dreaming/*.md"))
    flushed = root / "ops-bot/users/alice/memory/2026-11-06.md"
    assert len(dreamed) >= 2 and flushed.exists()
    for path in [*dreamed, flushed]:
        text = path.read_text()
        leaked = [kind for kind, secret in SECRETS.items() if secret in text]
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
