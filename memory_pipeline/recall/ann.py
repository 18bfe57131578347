"""An inverted-file (IVF) index over one tenant's in-memory vectors, for large tenants only.

A full NumPy scan reads every vector of the tenant for every query: 150 MB at 100,000 chunks of
384 floats, 20-40 ms on this machine, memory bound. Past ``RecallConfig.ann_min_rows`` rows the
vectors are clustered once (spherical k-means on a sample), stored grouped by cluster, and a
query scans only the ``nprobe`` clusters whose centroids are closest. ``bench/recall.py`` reports
its recall against the exact scan. Smaller tenants keep the exact scan, where it is already fast.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import sparse


class IvfIndex:
    """Vectors grouped by nearest centroid; ``search`` returns row indices of the original order.

    The index holds the only copy of the tenant's vectors it needs (grouped by list);
    ``vectors()`` reads them back in row order, so the tenant's rows can drop their own matrix.
    """

    def __init__(
        self, vectors: np.ndarray, lists: int | None = None, iterations: int = 8, seed: int = 0,
        centroids: np.ndarray | None = None,
    ):
        """Cluster ``vectors``; given ``centroids`` (a changed tenant's previous ones), k-means
        is skipped and every row is assigned to them."""
        n = len(vectors)
        if centroids is not None and centroids.shape[1:] == vectors.shape[1:] and len(centroids) <= n:
            self.centroids = np.ascontiguousarray(centroids, dtype=np.float32)
            self.lists = len(self.centroids)
        else:
            self.lists = max(1, min(n, lists or int(math.sqrt(n))))
            self.centroids = self._kmeans(vectors, iterations, seed)
        assign = np.empty(n, dtype=np.int64)
        for lo in range(0, n, 16384):  # bounded memory: 16384 x lists scores at a time
            assign[lo : lo + 16384] = np.argmax(vectors[lo : lo + 16384] @ self.centroids.T, axis=1)
        self.order = np.argsort(assign, kind="stable")
        self.grouped = np.ascontiguousarray(vectors[self.order])
        counts = np.bincount(assign, minlength=self.lists)
        self.offsets = np.concatenate([[0], np.cumsum(counts)])

    @classmethod
    def from_arrays(cls, centroids: np.ndarray, order: np.ndarray, grouped: np.ndarray, offsets: np.ndarray) -> IvfIndex:
        """An index saved before (``index_files.py``); the arrays may be memory-mapped."""
        index = cls.__new__(cls)
        index.centroids, index.order, index.grouped, index.offsets = centroids, order, grouped, offsets
        index.lists = len(centroids)
        return index

    def _kmeans(self, vectors: np.ndarray, iterations: int, seed: int) -> np.ndarray:
        n = len(vectors)
        rng = np.random.default_rng(seed)
        # 40 sample vectors per list are enough for k-means to place its centroids.
        sample = vectors[np.sort(rng.choice(n, size=min(n, self.lists * 40), replace=False))]
        centroids = sample[rng.choice(len(sample), size=self.lists, replace=False)].copy()
        members = np.arange(len(sample))
        for _ in range(iterations):
            assign = np.argmax(sample @ centroids.T, axis=1)
            onehot = sparse.csr_matrix(
                (np.ones(len(sample), dtype=np.float32), (assign, members)), shape=(self.lists, len(sample))
            )
            sums = np.asarray(onehot @ sample)
            norms = np.linalg.norm(sums, axis=1, keepdims=True)
            empty = norms[:, 0] == 0
            centroids = np.where(empty[:, None], centroids, sums / np.where(norms == 0, 1, norms))
        return np.ascontiguousarray(centroids, dtype=np.float32)

    def vectors(self) -> GroupedVectors:
        return GroupedVectors(self.grouped, self.order)

    def search(self, query: np.ndarray, k: int, nprobe: int = 16) -> tuple[np.ndarray, np.ndarray]:
        """(row indices, cosines) of the best ``k`` rows among the ``nprobe`` nearest clusters."""
        probe = np.argsort(-(self.centroids @ query))[: max(1, nprobe)]
        ids, scores = [], []
        for c in probe:
            lo, hi = self.offsets[c], self.offsets[c + 1]
            if hi > lo:
                scores.append(self.grouped[lo:hi] @ query)
                ids.append(self.order[lo:hi])
        if not ids:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        all_ids, all_scores = np.concatenate(ids), np.concatenate(scores)
        if len(all_ids) > k:
            top = np.argpartition(-all_scores, k - 1)[:k]
            all_ids, all_scores = all_ids[top], all_scores[top]
        return all_ids, all_scores


class GroupedVectors:
    """A tenant's vectors stored in IVF list order, indexed and multiplied in row order.

    It stands in for the rows' own matrix once the index exists (``Rows.ann_index``), so a large
    tenant keeps one copy of its vectors, not two: ``m[i]``, ``m[idx]``, ``m @ q`` and ``m.shape``
    behave as on the row-ordered matrix.
    """

    def __init__(self, grouped: np.ndarray, order: np.ndarray):
        self.grouped = grouped
        self.where = np.empty(len(order), dtype=np.int64)
        self.where[order] = np.arange(len(order))
        self.shape, self.dtype = grouped.shape, grouped.dtype

    def __len__(self) -> int:
        return len(self.grouped)

    def __getitem__(self, index):
        return self.grouped[self.where[index]]

    def __matmul__(self, query: np.ndarray) -> np.ndarray:
        return (self.grouped @ query)[self.where]

    def __array__(self, dtype=None, copy=None):
        out = self.grouped[self.where]
        return out if dtype is None else out.astype(dtype)
