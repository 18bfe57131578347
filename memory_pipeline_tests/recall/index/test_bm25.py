"""Recall's full-text channel: a BM25 index per tenant, analysed like LanceDB's by default."""

from __future__ import annotations

import bm25s
import numpy as np
import pytest

from memory_pipeline.recall.index.bm25 import K1, STOPWORDS_EN, B, TextIndex, _words, query_words
from memory_pipeline.recall.search import search
from memory_pipeline.recall.sources import ChunkSource, TenantCache
from memory_pipeline_tests.helpers import write
from memory_pipeline_tests.helpers.recall import indexed_workspace, ingest, recall_settings

DOCS = [
    "Alice runs the billing migration on Fridays.",
    "The billing dashboard was restarted.",
    "Bob prefers tea over coffee.",
    "Nothing about money here at all.",
]


def test_the_stop_words_are_lucenes_as_bm25s_has_them():
    from bm25s.stopwords import STOPWORDS_EN as reference

    assert tuple(STOPWORDS_EN) == tuple(reference)


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


def _stems(text: str) -> list[str]:
    _, codes, stems = _words([text])
    return [stems[c] for c in codes.tolist()]


@pytest.mark.parametrize(
    "text",
    [
        "Hello, Wörld! it's foo_bar 42x",
        "naïve café ½ ² ٣ 東京 タワー",
        "Running runs ran; the THE a",
        "x" * 50 + " ok",
        "tab\there\nnew—dash  ",
        "",
    ],
)
def test_queries_and_documents_are_split_into_the_same_words(text):
    assert query_words(text) == _stems(text)


def test_scores_equal_the_reference_bm25():
    """The index built with whole-array operations scores exactly as bm25s's Lucene BM25."""
    rng = np.random.default_rng(4)
    words = [f"w{i}" for i in range(300)]
    docs = [" ".join(rng.choice(words, size=rng.integers(1, 30), p=None)) for _ in range(400)]
    docs += ["", "the of and"]  # rows without an indexable word
    ours = TextIndex(docs)
    reference = bm25s.BM25(k1=K1, b=B, method="lucene")
    reference.index([_stems(d) for d in docs], show_progress=False)
    for query in ["w1 w2", "w7 w7 w250", docs[5], "w299 unknown"]:
        expected = reference.get_scores([w for w in query_words(query) if w in reference.vocab_dict])
        assert np.allclose(ours.scores_for(query), expected, atol=1e-5)


def test_top_is_the_exact_ranking_for_rare_and_common_words():
    rng = np.random.default_rng(9)
    words = [f"w{i}" for i in range(50)] + [f"rare{i}" for i in range(400)]
    docs = [" ".join(rng.choice(words[:50], size=rng.integers(3, 15))) + f" rare{i % 400}" for i in range(2000)]
    index = TextIndex(docs)
    allowed = rng.random(len(docs)) < 0.5
    # rare words take the sparse path, common ones the dense one: both give the exact ranking
    for query in ["rare3 rare7", "w0 w1", "w3 w17 w49 rare5", "w5"]:
        exact = index.scores_for(query)
        rows, scores = index.top(query, 30)
        assert np.allclose(scores, np.sort(exact)[::-1][: len(scores)])
        assert np.allclose(exact[rows], scores) and np.all(scores > 0)
        assert len(rows) == min(30, np.count_nonzero(exact))
        rows, scores = index.top(query, 30, allowed)
        assert allowed[rows].all()
        assert np.allclose(scores, np.sort(exact[allowed])[::-1][: len(scores)])


def test_a_tenants_scores_do_not_move_when_another_tenant_writes(tmp_path):
    """Word statistics are per tenant: bob's notes never shift alice's ranking or scores."""
    root, uri = indexed_workspace(tmp_path)
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
    root, uri = indexed_workspace(tmp_path)
    settings = recall_settings(root, uri)
    results = search("throttling", "support-bot", "alice", settings=settings, min_score=0, sources=["sessions"])
    assert results and "throttled" in results[0].snippet
    assert results[0].parts["text"] > 0


def test_common_words_of_a_large_tenant_read_their_dense_columns_exactly():
    rng = np.random.default_rng(12)
    words = np.array([f"w{i}" for i in range(40)])
    docs = [" ".join(rng.choice(words, size=rng.integers(2, 12))) for _ in range(12_000)]
    index = TextIndex(docs)
    assert index.dense  # the most common stems of a tenant this size are dense
    allowed = rng.random(len(docs)) < 0.3
    for query in ["w0 w1 w2", "w39", "w5 w5 w30"]:
        exact = index.scores_for(query)
        rows, scores = index.top(query, 25)
        assert np.allclose(scores, np.sort(exact)[::-1][:25]) and np.allclose(exact[rows], scores)
        rows, scores = index.top(query, 25, allowed)
        assert allowed[rows].all() and np.allclose(scores, np.sort(exact[allowed])[::-1][:25])


def test_an_updated_index_equals_one_built_from_all_texts():
    """Rows deleted, added and moved: ``updated`` gives the same vocabulary, postings, word
    counts and scores, to the bit, as an index built from the new texts, dense columns included."""
    rng = np.random.default_rng(2)
    words = ["billing", "dashboard", "coffee", "tea", "restart", "migration", "friday", "heron", "lake"]

    def texts(count):
        return [" ".join(rng.choice(words, size=int(rng.integers(1, 12))).tolist()) for _ in range(count)]

    old_texts, added = texts(12_000), texts(500) + ["a brand new zebra word"]
    keep = rng.random(len(old_texts)) > 0.1
    n = int(keep.sum()) + len(added)
    added_rows = np.sort(rng.choice(n, len(added), replace=False))
    new_row = np.full(len(old_texts), -1)
    new_row[keep] = np.setdiff1d(np.arange(n), added_rows)
    now = [""] * n
    for i in np.flatnonzero(keep):
        now[new_row[i]] = old_texts[i]
    for j, row in enumerate(added_rows):
        now[row] = added[j]

    updated, built = TextIndex(old_texts).updated(new_row, added, added_rows, n), TextIndex(now)
    assert updated.vocab == built.vocab and "zebra" in updated.vocab
    for name in ("scores", "members", "starts", "tf", "length"):
        assert np.array_equal(getattr(updated, name), getattr(built, name)), name
    assert built.dense and updated.dense.keys() == built.dense.keys()
    assert all(np.array_equal(updated.dense[s], built.dense[s]) for s in built.dense)
    for query in ("billing dashboard", "zebra", "heron lake friday"):
        assert [a.tolist() for a in updated.top(query, 20)] == [a.tolist() for a in built.top(query, 20)]
