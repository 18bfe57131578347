"""How the store grows on a large first ingest: appends where nothing can collide, no duplicates.

Proves: a cache put appends only the hashes not yet cached (a hash already cached keeps its
vector, and a put of only cached hashes commits nothing); writers racing on the same hashes,
from threads with their own connections and from separate processes, leave exactly one cache row
per hash, because the check and the append happen under the commit lock; the cache's id index is
built and rebuilt by row count without compacting the cache, and ``compact_cache`` compacts it
once at the end of the embedding step; the first chunks of a file are appended in one commit and
racing first writes of the same file leave no duplicate chunk.
"""

from __future__ import annotations

import multiprocessing

import numpy as np
import polars as pl
import pyarrow as pa

from memory_pipeline.embedding import HashEmbedder
from memory_pipeline.l0.pipeline import TenantChunks, embed_tenants
from memory_pipeline.l0.store import ChunkIndex
from memory_pipeline.store.base import fragment_count
from memory_pipeline.store.tables import FILES
from memory_pipeline_tests.helpers import run_together
from memory_pipeline_tests.helpers.store import DIM, HASHES, put_all_hashes, rows, vectors


def cache_ids(store: ChunkIndex) -> list[str]:
    return store.cache().to_arrow().column("id").to_pylist()


def fragments(store: ChunkIndex) -> int:
    return fragment_count(store.cache())


def test_put_appends_only_hashes_not_yet_cached(tmp_path):
    store = ChunkIndex(tmp_path, dim=DIM)
    first = vectors(3)
    assert store.put_cached_vectors("m", ["h1", "h2", "h3"], first) == 3
    version = store.cache().version
    assert store.put_cached_vectors("m", ["h1", "h4"], vectors(2, seed=1)) == 1
    assert store.cache().version == version + 1
    assert store.put_cached_vectors("m", ["h2", "h4"], vectors(2, seed=2)) == 0
    assert store.cache().version == version + 1  # nothing new, no commit
    assert sorted(cache_ids(store)) == ["m|h1", "m|h2", "m|h3", "m|h4"]
    np.testing.assert_array_equal(store.cached_vectors("m", ["h1"])["h1"], first[0])
    assert store.put_cached_vectors("other", ["h1"], vectors(1)) == 1  # keyed by model too


def test_threads_putting_the_same_hashes_leave_one_row_each(tmp_path):
    uri = str(tmp_path / "lancedb")
    assert run_together(lambda k: put_all_hashes(uri, k), 4) == []
    ids = cache_ids(ChunkIndex(uri, dim=DIM))
    assert len(ids) == len(HASHES) and len(set(ids)) == len(HASHES)


def test_processes_putting_the_same_hashes_leave_one_row_each(tmp_path):
    uri = str(tmp_path / "lancedb")
    context = multiprocessing.get_context("spawn")
    procs = [context.Process(target=put_all_hashes, args=(uri, k)) for k in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    ids = cache_ids(ChunkIndex(uri, dim=DIM))
    assert len(ids) == len(HASHES) and len(set(ids)) == len(HASHES)


def test_cache_index_is_rebuilt_by_row_count_without_compacting(tmp_path):
    store = ChunkIndex(tmp_path, dim=DIM)
    store.CACHE_INDEX_MIN_ROWS = 100
    store.put_cached_vectors("m", HASHES[:90], vectors(90))
    store.maintain_cache_index()
    assert [i.name for i in store.cache().list_indices()] == []
    store.put_cached_vectors("m", HASHES[90:120], vectors(30))
    store.maintain_cache_index()
    assert store.cache().index_stats("id_idx").num_unindexed_rows == 0
    store.put_cached_vectors("m", HASHES[120:140], vectors(20))  # 20 of 140: under a fifth
    store.maintain_cache_index()
    assert store.cache().index_stats("id_idx").num_unindexed_rows == 20
    store.put_cached_vectors("m", HASHES[140:180], vectors(40))  # 60 of 180: rebuilt
    store.maintain_cache_index()
    assert store.cache().index_stats("id_idx").num_unindexed_rows == 0
    assert fragments(store) == 4  # one per put: nothing was compacted
    assert set(store.cached_vectors("m", HASHES[:180])) == set(HASHES[:180])


def test_compact_cache_merges_the_run_s_fragments_once(tmp_path):
    store = ChunkIndex(tmp_path, dim=DIM)
    for start in range(0, 100, 20):
        store.put_cached_vectors("m", HASHES[start : start + 20], vectors(20, seed=start))
    assert fragments(store) == 5
    assert store.compact_cache(min_fragments=10) is False
    assert store.compact_cache(min_fragments=3) is True
    assert fragments(store) == 1
    assert store.compact_cache(min_fragments=2) is False  # one fragment left: nothing to do
    got = store.cached_vectors("m", HASHES[:100])
    np.testing.assert_array_equal(got[HASHES[45]], vectors(20, seed=40)[5])


def test_embedding_step_caches_each_text_once_and_compacts_at_its_end(tmp_path):
    store = ChunkIndex(tmp_path, dim=DIM)
    store.CACHE_COMPACT_MIN_FRAGMENTS = 3
    texts = [f"text number {i}" for i in range(50)]
    chunks = pl.DataFrame({"text_hash": [f"t{i}" for i in range(50)], "text": texts})
    batch = TenantChunks("a~u", chunks, FILES.schema().empty_table(), [], [])
    embedder = HashEmbedder(dim=DIM)
    report = embed_tenants([batch], embedder, store, block=10)
    assert (report.computed, report.cache_hits) == (50, 0)
    assert fragments(store) == 1  # five blocks appended, then compacted once
    again = embed_tenants([batch], embedder, store, block=10)
    assert (again.computed, again.cache_hits) == (0, 50)
    ids = cache_ids(store)
    assert len(ids) == 50 and len(set(ids)) == 50


def test_first_chunks_of_a_file_are_appended_and_racing_writers_do_not_duplicate(tmp_path):
    uri = str(tmp_path / "lancedb")
    store = ChunkIndex(uri, dim=DIM)
    store.chunks()
    version = store.chunks().version
    store.replace_file_chunks("a~u", ["f.md"], rows("a~u", "f.md", ["one", "two"], "f"))
    assert store.chunks().version == version + 1
    def writer(_: int) -> None:
        own = ChunkIndex(uri, dim=DIM)  # its own connection, as another process would have
        own.replace_file_chunks("a~u", ["g.md"], rows("a~u", "g.md", ["three", "four", "five"], "g"))

    assert run_together(writer, 4) == []
    table = store.chunks().to_arrow()
    assert sorted(table.column("text").to_pylist()) == ["five", "four", "one", "three", "two"]
    assert pa.compute.count_distinct(table.column("id")).as_py() == table.num_rows


def test_bounded_session_is_shared_and_the_store_works_under_it(tmp_path, monkeypatch):
    from memory_pipeline.store import base

    monkeypatch.setenv(base.CACHE_MB_ENV, "8")
    assert base._session(8) is base._session(8)
    store = ChunkIndex(tmp_path, dim=DIM)
    store.put_cached_vectors("m", HASHES[:40], vectors(40))
    other = ChunkIndex(tmp_path, dim=DIM)
    assert set(other.cached_vectors("m", HASHES[:50])) == set(HASHES[:40])
    assert base._session(8).size_bytes > 0
