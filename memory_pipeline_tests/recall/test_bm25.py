"""Recall's full-text channel: a BM25 index per tenant, analysed like LanceDB's by default."""

from __future__ import annotations

import numpy as np

from memory_pipeline.recall.bm25 import TextIndex
from memory_pipeline.recall.search import search
from memory_pipeline.recall.sources import ChunkSource, TenantCache
from memory_pipeline_tests.conftest import write
from memory_pipeline_tests.recall.conftest import build_workspace, ingest, recall_settings

DOCS = [
    "Alice runs the billing migration on Fridays.",
    "The billing dashboard was restarted.",
    "Bob prefers tea over coffee.",
    "Nothing about money here at all.",
]


def test_stems_match_and_stop_words_do_not():
    index = TextIndex(DOCS)
    rows, scores = index.top("running billing", 10)
    assert rows.tolist()[0] == 0  # "running" and "runs" share the stem "run"
    assert set(rows.tolist()) == {0, 1}
    assert np.all(np.diff(scores) <= 0) and np.all(scores > 0)
    assert index.top("the of and", 10)[0].size == 0  # only stop words: no evidence
    assert index.top("submarine", 10)[0].size == 0
    assert index.top("", 10)[0].size == 0


def test_limit_and_allowed_rows():
    index = TextIndex(DOCS)
    assert index.top("billing", 1)[0].tolist() == [1]  # the shorter document ranks first
    allowed = np.array([True, False, True, True])
    assert index.top("billing", 10, allowed)[0].tolist() == [0]
    assert TextIndex([]).top("billing", 10)[0].size == 0


def test_rarer_words_weigh_more():
    index = TextIndex(["tea tea tea", "coffee", "tea", "tea"])
    rows, _ = index.top("tea coffee", 4)
    assert rows.tolist()[0] == 1  # one rare word beats three common ones


def test_a_tenants_scores_do_not_move_when_another_tenant_writes(tmp_path):
    """Word statistics are per tenant: bob's notes never shift alice's ranking or scores."""
    root, uri = tmp_path / "agents", str(tmp_path / "lancedb")
    root.mkdir()
    build_workspace(root)
    ingest(root, uri)
    cache = TenantCache(uri)
    alice = "support-bot~alice"
    before = cache.text_hits(ChunkSource(), [alice], ["memory", "sessions"], "invoices finance mailbox", 10)
    assert before and all(tenant == alice for tenant, _ in before)

    for i in range(30):
        write(root, f"support-bot/users/bob/memory/finance-{i}.md", f"# Finance {i}\n\nThe finance mailbox got invoice batch {i}.\n")
    ingest(root, uri)
    rows = cache.rows(ChunkSource(), "support-bot~bob")
    assert sum("finance mailbox" in t for t in rows.text) == 30  # bob's writes are indexed
    after = cache.text_hits(ChunkSource(), [alice], ["memory", "sessions"], "invoices finance mailbox", 10)
    assert after == before


def test_search_finds_a_note_by_an_inflected_word(tmp_path):
    root, uri = tmp_path / "agents", str(tmp_path / "lancedb")
    root.mkdir()
    build_workspace(root)
    ingest(root, uri)
    settings = recall_settings(root, uri)
    results = search("throttling", "support-bot", "alice", settings=settings, min_score=0, sources=["sessions"])
    assert results and "throttled" in results[0].snippet
    assert results[0].parts["text"] > 0
