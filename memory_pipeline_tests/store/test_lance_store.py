"""The LanceDB store: atomic per-file replacement, the embedding cache, upserts.

Proves: replacing a file's chunks is one commit (the version before shows only the old chunks,
the version after only the new ones); rows of other files and tenants are untouched; upserts
never duplicate; the cache returns exactly what was put, keyed by model and text hash; and the
full-text index covers every row after ``ensure_fts_index``.
"""

from __future__ import annotations

import numpy as np

from memory_pipeline.l0.store import ChunkIndex
from memory_pipeline.store.tables import CHUNKS
from memory_pipeline_tests.helpers.store import DIM, rows


def texts_at(store, version=None):
    table = store.chunks()
    if version is not None:
        table.checkout(version)
    return sorted(table.to_arrow().column("text").to_pylist())


def test_replace_is_one_commit(tmp_path):
    store = ChunkIndex(tmp_path, dim=DIM)
    store.replace_file_chunks("a~u", ["f.md"], rows("a~u", "f.md", ["old one", "old two"], "o"))
    store.replace_file_chunks("a~u", ["g.md"], rows("a~u", "g.md", ["other file"], "g"))
    store.replace_file_chunks("b~u", ["f.md"], rows("b~u", "f.md", ["other tenant"], "b"))
    before = store.chunks().version
    store.replace_file_chunks("a~u", ["f.md"], rows("a~u", "f.md", ["new one"], "n"))
    after = store.chunks().version
    assert after == before + 1
    assert texts_at(store, before) == ["old one", "old two", "other file", "other tenant"]
    assert texts_at(store) == ["new one", "other file", "other tenant"]


def test_replace_with_nothing_deletes_and_rerun_is_idempotent(tmp_path):
    store = ChunkIndex(tmp_path, dim=DIM)
    batch = rows("a~u", "f.md", ["x", "y"], "o")
    store.replace_file_chunks("a~u", ["f.md"], batch)
    store.replace_file_chunks("a~u", ["f.md"], batch)
    assert store.chunks().count_rows() == 2
    store.replace_file_chunks("a~u", ["f.md"], CHUNKS.schema(DIM).empty_table())
    assert store.chunks().count_rows() == 0


def test_embedding_cache_round_trip(tmp_path):
    store = ChunkIndex(tmp_path, dim=DIM)
    assert store.cached_vectors("m", ["h1"]) == {}
    vectors = np.eye(3, DIM, dtype=np.float32)
    store.put_cached_vectors("m", ["h1", "h2", "h3"], vectors)
    store.put_cached_vectors("m", ["h1"], vectors[:1])  # upsert, not a duplicate
    got = store.cached_vectors("m", ["h1", "h3", "missing"])
    assert set(got) == {"h1", "h3"}
    np.testing.assert_array_equal(got["h3"], vectors[2])
    assert store.cached_vectors("other-model", ["h1"]) == {}
    assert store.cache().count_rows() == 3


def test_fts_covers_rows_added_after_index(tmp_path):
    store = ChunkIndex(tmp_path, dim=DIM)
    store.replace_file_chunks("a~u", ["f.md"], rows("a~u", "f.md", ["alpha bravo"], "o"))
    assert store.ensure_fts_index()
    store.replace_file_chunks("a~u", ["g.md"], rows("a~u", "g.md", ["charlie delta"], "g"))
    assert store.ensure_fts_index()
    assert store.unindexed_rows() == 0
    hits = store.chunks().search("charlie", query_type="fts").limit(5).to_list()
    assert [h["text"] for h in hits] == ["charlie delta"]
