"""The IVF index large tenants are searched through: it finds what the exact scan finds on
clustered vectors, returns indices of the original row order, and ``search`` gives the same
answers through it as through the exact scan.
"""

from __future__ import annotations

import numpy as np

from memory_pipeline.recall.index.ann import IvfIndex
from memory_pipeline.recall.search import search
from memory_pipeline_tests.helpers.recall import recall_settings


def _clustered(n: int, dim: int = 32, clusters: int = 20, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(clusters, dim))
    x = centers[rng.integers(0, clusters, n)] + 0.3 * rng.normal(size=(n, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def test_ivf_finds_the_exact_nearest_rows():
    x = _clustered(3000)
    index = IvfIndex(x, lists=40)
    assert index.offsets[-1] == len(x) and sorted(index.order.tolist()) == list(range(len(x)))
    hits = 0
    for row in range(0, 3000, 150):
        ids, scores = index.search(x[row], 10, nprobe=8)
        exact = np.argsort(-(x @ x[row]))[:10]
        assert row in ids.tolist()
        assert np.allclose(np.sort(scores), np.sort(x[ids] @ x[row]))
        hits += len(set(ids.tolist()) & set(exact.tolist()))
    assert hits / (20 * 10) >= 0.9


def test_probing_every_list_is_exact():
    x = _clustered(500)
    index = IvfIndex(x, lists=10)
    q = x[7]
    ids, _ = index.search(q, 5, nprobe=10)
    assert set(ids.tolist()) == set(np.argsort(-(x @ q))[:5].tolist())


def test_search_through_the_index_matches_the_exact_scan(indexed, settings, embedder):
    approximate = recall_settings(*indexed, ann_min_rows=1, ann_nprobe=1000)
    for query in ("annual plans refundable", "API rate limit", "VPN certificate"):
        exact = search(query, "support-bot", "alice", store=indexed[1], embedder=embedder, settings=settings, min_score=0)
        via_ivf = search(query, "support-bot", "alice", store=indexed[1], embedder=embedder, settings=approximate, min_score=0)
        assert [r.citation for r in via_ivf] == [r.citation for r in exact]


def test_grouped_vectors_read_back_in_row_order():
    x = _clustered(2000)
    view = IvfIndex(x, lists=30).vectors()
    assert view.shape == x.shape and len(view) == len(x)
    assert np.array_equal(view[17], x[17])
    picks = np.array([1999, 0, 512, 512, 3])
    assert np.array_equal(view[picks], x[picks])
    assert np.allclose(view @ x[5], x @ x[5])
    assert np.array_equal(np.asarray(view), x)


def test_vectors_read_from_arrow_follow_the_sort_order():
    import pyarrow as pa

    from memory_pipeline.recall.rows import vector_matrix

    x = _clustered(50, dim=4)
    col = pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), 4)
    table = pa.Table.from_batches(  # two chunks, as LanceDB returns them
        [pa.record_batch([col[:20]], names=["vector"]), pa.record_batch([col[20:]], names=["vector"])]
    )
    order = np.random.default_rng(0).permutation(50)
    assert np.array_equal(vector_matrix(table), x)
    assert np.array_equal(vector_matrix(table, order), x[order])


def test_an_updated_index_holds_the_changed_rows_and_compacts_to_the_same():
    """Rows deleted and added after the lists were built: the updated index (tail, deleted rows
    marked) reads back the new rows' vectors in their new order and, probing every list, finds
    what the exact scan finds; compacted, it holds the same rows in one set of lists."""
    rng = np.random.default_rng(5)
    old = _clustered(1500)
    keep = np.arange(1500) % 5 != 0
    added = _clustered(300, seed=9)
    n = int(keep.sum()) + 300
    added_rows = np.sort(rng.choice(n, 300, replace=False))
    new_row = np.full(1500, -1)
    new_row[keep] = np.setdiff1d(np.arange(n), added_rows)
    now = np.empty((n, old.shape[1]), dtype=np.float32)
    now[new_row[keep]], now[added_rows] = old[keep], added

    index = IvfIndex(old, lists=30).updated(new_row, added, added_rows)
    assert index.dead == 300 and len(index.tail_order) == 300
    for ivf in (index, index.compacted()):
        assert np.array_equal(np.asarray(ivf.vectors()), now)
        assert np.array_equal(ivf.vectors()[[3, 7]], now[[3, 7]])
        for q in now[:20]:
            ids, _ = ivf.search(q, 10, nprobe=30)
            assert set(ids.tolist()) == set(np.argsort(-(now @ q))[:10].tolist())
    assert index.compacted().dead == 0 and len(index.compacted().tail_order) == 0
