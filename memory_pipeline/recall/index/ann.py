"""An inverted-file (IVF) index over one tenant's in-memory vectors, for large tenants only.

A full NumPy scan reads every vector of the tenant for every query: 150 MB at 100,000 chunks of
384 floats, 20-40 ms on this machine, memory bound. Past ``RecallConfig.ann_min_rows`` rows the
vectors are clustered once (spherical k-means on a sample), stored grouped by cluster, and a
query scans only the ``nprobe`` clusters whose centroids are closest. ``bench/recall.py`` reports
its recall against the exact scan. Smaller tenants keep the exact scan, where it is already fast.

A changed tenant's index is updated, not rebuilt (``updated``): its deleted rows stay in the
lists marked -1 and are skipped, and its new rows go to a small second set of lists, the tail,
assigned to the same centroids. The large grouped matrix is never rewritten for a change (its
persisted file is linked into the new fingerprint's folder); the maintenance job folds the tail
in and drops the deleted rows (``compacted``).
"""

from __future__ import annotations

import math

import numpy as np


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
        assign = self._assign(vectors)
        self.order = np.argsort(assign, kind="stable")
        self.grouped = np.ascontiguousarray(vectors[self.order])
        counts = np.bincount(assign, minlength=self.lists)
        self.offsets = np.concatenate([[0], np.cumsum(counts)])
        self._no_tail(vectors.shape[1] if vectors.ndim == 2 else 0)
        self.trained_on = n

    def _no_tail(self, dim: int) -> None:
        self.tail_order = np.zeros(0, dtype=np.int64)
        self.tail_offsets = np.zeros(self.lists + 1, dtype=np.int64)
        self.tail_grouped = np.zeros((0, dim), dtype=np.float32)

    def _assign(self, vectors: np.ndarray) -> np.ndarray:
        assign = np.empty(len(vectors), dtype=np.int64)
        for lo in range(0, len(vectors), 16384):  # bounded memory: 16384 x lists scores at a time
            assign[lo : lo + 16384] = np.argmax(vectors[lo : lo + 16384] @ self.centroids.T, axis=1)
        return assign

    @property
    def dead(self) -> int:
        """Deleted rows still in the lists."""
        return int((np.asarray(self.order) < 0).sum())

    def updated(self, new_row: np.ndarray, added: np.ndarray, added_rows: np.ndarray) -> IvfIndex:
        """The index after a change: ``new_row[r]`` is the new position of old row ``r`` (-1:
        deleted), ``added`` the new rows' vectors at positions ``added_rows``. Only the new rows
        are assigned to the centroids; the base lists keep their vectors where they are."""
        index = IvfIndex.__new__(IvfIndex)
        index.centroids, index.lists, index.trained_on = self.centroids, self.lists, self.trained_on
        index.grouped, index.offsets = self.grouped, self.offsets
        index.order = _moved(new_row, self.order)
        old_tail = _moved(new_row, self.tail_order)
        keep = old_tail >= 0
        lists = np.concatenate([
            np.repeat(np.arange(self.lists), np.diff(self.tail_offsets))[keep],
            self._assign(added) if len(added) else np.zeros(0, dtype=np.int64),
        ])
        rows = np.concatenate([old_tail[keep], np.asarray(added_rows, dtype=np.int64)])
        added = np.asarray(added, dtype=np.float32).reshape(-1, self.grouped.shape[1])
        vectors = np.concatenate([np.asarray(self.tail_grouped)[keep], added])
        by_list = np.argsort(lists, kind="stable")
        index.tail_order, index.tail_grouped = rows[by_list], np.ascontiguousarray(vectors[by_list])
        index.tail_offsets = np.concatenate([[0], np.cumsum(np.bincount(lists, minlength=self.lists))])
        return index

    def compacted(self, allocate=None) -> IvfIndex:
        """The same index with its tail folded into the base lists and deleted rows dropped;
        ``allocate(shape)`` gives the new grouped matrix (a file, for bounded memory)."""
        base_list = np.repeat(np.arange(self.lists), np.diff(self.offsets))
        tail_list = np.repeat(np.arange(self.lists), np.diff(self.tail_offsets))
        order, tail_order = np.asarray(self.order), np.asarray(self.tail_order)
        live = order >= 0
        lists = np.concatenate([base_list[live], tail_list])
        # (segment, position) of each kept vector, grouped by list: base rows first in each list.
        where = np.concatenate([np.flatnonzero(live), len(order) + np.arange(len(tail_order))])
        by_list = np.argsort(lists, kind="stable")
        where = where[by_list]
        index = IvfIndex.__new__(IvfIndex)
        index.centroids, index.lists, index.trained_on = self.centroids, self.lists, self.trained_on
        index.order = np.concatenate([order[live], tail_order])[by_list]
        shape = (len(where), self.grouped.shape[1])
        grouped = allocate(shape) if allocate else np.empty(shape, dtype=np.float32)
        for lo in range(0, len(where), 65536):  # reads the memory-mapped base a block at a time
            part = where[lo : lo + 65536]
            base = part < len(order)
            grouped[lo : lo + len(part)][base] = self.grouped[part[base]]
            grouped[lo : lo + len(part)][~base] = self.tail_grouped[part[~base] - len(order)]
        index.grouped = grouped
        index.offsets = np.concatenate([[0], np.cumsum(np.bincount(lists, minlength=self.lists))])
        index._no_tail(self.grouped.shape[1])
        return index

    def arrays(self) -> dict[str, np.ndarray]:
        """What ``from_arrays`` takes back, by name (``files.py`` saves them)."""
        return {"order": self.order, "offsets": self.offsets, "grouped": self.grouped, "centroids": self.centroids,
                "tail_order": self.tail_order, "tail_offsets": self.tail_offsets, "tail_grouped": self.tail_grouped,
                "trained_on": np.array([self.trained_on], dtype=np.int64)}

    @classmethod
    def from_arrays(
        cls, centroids: np.ndarray, order: np.ndarray, grouped: np.ndarray, offsets: np.ndarray,
        tail: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None, trained_on: int | None = None,
    ) -> IvfIndex:
        """An index saved before (``files.py``); the arrays may be memory-mapped.
        ``tail`` is (order, offsets, grouped) of the rows added since the lists were written."""
        index = cls.__new__(cls)
        index.centroids, index.order, index.grouped, index.offsets = centroids, order, grouped, offsets
        index.lists = len(centroids)
        index.trained_on = trained_on or len(order)
        if tail is None:
            index._no_tail(grouped.shape[1])
        else:
            index.tail_order, index.tail_offsets, index.tail_grouped = tail
        return index

    def _kmeans(self, vectors: np.ndarray, iterations: int, seed: int) -> np.ndarray:
        from scipy import sparse  # 0.7 s to import: not on the path of a persisted index's first query

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
        return GroupedVectors(self.grouped, self.order, self.tail_grouped, self.tail_order)

    def search(self, query: np.ndarray, k: int, nprobe: int = 16) -> tuple[np.ndarray, np.ndarray]:
        """(row indices, cosines) of the best ``k`` rows among the ``nprobe`` nearest clusters."""
        probe = np.argsort(-(self.centroids @ query))[: max(1, nprobe)]
        ids, scores = [], []
        tail = len(self.tail_order) > 0
        for c in probe:
            lo, hi = self.offsets[c], self.offsets[c + 1]
            if hi > lo:
                scores.append(self.grouped[lo:hi] @ query)
                ids.append(self.order[lo:hi])
            lo, hi = (self.tail_offsets[c], self.tail_offsets[c + 1]) if tail else (0, 0)
            if hi > lo:
                scores.append(self.tail_grouped[lo:hi] @ query)
                ids.append(self.tail_order[lo:hi])
        if not ids:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        all_ids, all_scores = np.concatenate(ids), np.concatenate(scores)
        if all_ids.min() < 0:  # deleted rows of an updated index
            live = all_ids >= 0
            all_ids, all_scores = all_ids[live], all_scores[live]
        if len(all_ids) > k:
            top = np.argpartition(-all_scores, k - 1)[:k]
            all_ids, all_scores = all_ids[top], all_scores[top]
        return all_ids, all_scores


def _moved(new_row: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``new_row`` of each of ``rows``; a row deleted before (-1) stays -1."""
    rows = np.asarray(rows)
    return np.where(rows >= 0, new_row[np.maximum(rows, 0)], -1)


class GroupedVectors:
    """A tenant's vectors stored in IVF list order, indexed and multiplied in row order.

    It stands in for the rows' own matrix once the index exists (``Rows.ann_index``), so a large
    tenant keeps one copy of its vectors, not two: ``m[i]``, ``m[idx]``, ``m @ q`` and ``m.shape``
    behave as on the row-ordered matrix.
    """

    def __init__(self, grouped: np.ndarray, order: np.ndarray, tail: np.ndarray | None = None,
                 tail_order: np.ndarray | None = None):
        self.grouped = grouped
        self.tail = tail if tail is not None and len(tail) else None
        order = np.asarray(order)
        live = np.flatnonzero(order >= 0) if self.tail is not None or order.min(initial=0) < 0 else None
        n = (len(order) if live is None else len(live)) + (len(tail_order) if self.tail is not None else 0)
        self.where = np.empty(n, dtype=np.int64)
        if live is None:
            self.where[order] = np.arange(len(order))
        else:
            self.where[order[live]] = live
        if self.tail is not None:  # positions past the base lists are rows of the tail
            self.where[np.asarray(tail_order)] = len(order) + np.arange(len(tail_order))
        self.shape, self.dtype = (n, grouped.shape[1]), grouped.dtype

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, index):
        where = self.where[index]
        if self.tail is None:
            return self.grouped[where]
        base = len(self.grouped)
        if np.ndim(where) == 0:
            return self.grouped[where] if where < base else self.tail[where - base]
        out = np.empty((len(where), self.shape[1]), dtype=self.dtype)
        in_base = where < base
        out[in_base] = self.grouped[where[in_base]]
        out[~in_base] = self.tail[where[~in_base] - base]
        return out

    def __matmul__(self, query: np.ndarray) -> np.ndarray:
        scores = self.grouped @ query
        if self.tail is not None:
            scores = np.concatenate([scores, self.tail @ query])
        return scores[self.where]

    def __array__(self, dtype=None, copy=None):
        out = self[np.arange(self.shape[0])]
        return out if dtype is None else out.astype(dtype)
