"""A changed tenant's persisted recall indices, updated from the rows that changed.

A tenant's folder (``files.py``) keeps each row's write time beside its id. When the
tenant's fingerprint moves, the ids and write times LanceDB holds now (read anyway to compute
the fingerprint) are compared with the folder's: a row whose id and write time both match is
unchanged, any other old row was deleted or rewritten, any other current row is read from
LanceDB (only those: a filter on the write time). The new fingerprint's folder is then made of
the old one and those rows:

- rows: the old snapshot without the deleted rows, plus the added ones, in the order a build
  from scratch gives (``RecallSource.sort_keys``), written in slices (bounded memory);
- id lookup: the old sorted ids without the deleted ones, the added ones inserted;
- vectors: the IVF's base lists stay as they are (the file is linked into the new folder), the
  deleted rows marked, the added rows assigned to the same centroids in a small tail
  (``IvfIndex.updated``); a tenant without an IVF yet gets its vector matrix rewritten;
- BM25: the old postings without the deleted rows, moved to their new row numbers, plus the
  added rows' postings, every score computed again from the new statistics
  (``TextIndex.updated``): the same index a build from all texts makes.

So a search after an update answers exactly as one over indices built from scratch (the tests
compare the two after adds, rewrites and deletes). Past ``MAX_CHANGED_SHARE`` of the rows, or a
tenant out of the size range its IVF centroids were trained on, the update is not tried and the
tenant is rebuilt.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from memory_pipeline.recall.index.files import TenantFiles
from memory_pipeline.recall.rows import Rows, release_freed_memory

log = logging.getLogger(__name__)

MAX_CHANGED_SHARE = 0.5  # more than half of the rows changed: rebuilt (as quick, and compact)
WRITE_SLICE = 100_000


def _micros(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    return pc.cast(column, pa.int64()).to_numpy(zero_copy_only=False)


def updated_rows(
    files: TenantFiles, source, tenant: str, current: pa.Table, fingerprint: str,
    read_since: Callable[[pa.Scalar], pa.Table],
) -> Rows | None:
    """The tenant's rows of ``fingerprint``, persisted by updating its previous folder; None when
    there is none to update (or the change is too large): the caller rebuilds.

    ``current`` holds the tenant's ``id`` and ``updated_at`` as LanceDB has them now;
    ``read_since(t)`` reads the tenant's rows (``source.columns``) written at ``t`` or later.
    """
    previous = files.previous()
    if previous is None or previous == fingerprint:
        return None
    old = files.load(tenant, previous)
    if old is None or "updated_at" not in old.table.column_names:
        return None
    started = time.perf_counter()
    n_old = len(old)
    ids = current.column("id").combine_chunks()
    at = pc.index_in(ids, value_set=old.table.column("id").combine_chunks())
    at = pc.fill_null(at, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    now = _micros(current.column("updated_at"))
    old_ts = _micros(old.table.column("updated_at"))
    same = (at >= 0) & (old_ts[np.maximum(at, 0)] == now)
    live = np.zeros(n_old, dtype=bool)
    live[at[same]] = True
    changed = int((~same).sum()) + n_old - int(live.sum())
    if changed > MAX_CHANGED_SHARE * max(len(ids), n_old) or int(same.sum()) != int(live.sum()):
        return None
    added = ids.filter(pa.array(~same))
    if len(added):
        since = pc.min(current.column("updated_at").filter(pa.array(~same)))
        arrow = read_since(since)
        where = pc.fill_null(pc.index_in(arrow.column("id"), value_set=added), -1).to_numpy(zero_copy_only=False)
        wanted = now[~same]
        keep = (where >= 0) & (wanted[np.maximum(where, 0)] == _micros(arrow.column("updated_at")))
        arrow = arrow.filter(pa.array(keep))
        if arrow.num_rows != len(added):
            return None
        delta = source.to_rows(tenant, arrow)
        del arrow
    else:
        delta = None
    ok = _write(files, source, old, live, delta, fingerprint, tenant)
    del old, delta
    release_freed_memory()
    if not ok:
        return None
    rows = files.load(tenant, fingerprint)
    if rows is not None:
        log.info("recall index of %s updated: %d rows changed of %d, %.2f s", tenant, changed, len(rows),
                 time.perf_counter() - started)
    return rows


def _write(files: TenantFiles, source, old: Rows, live: np.ndarray, delta: Rows | None, fingerprint: str,
           tenant: str) -> bool:
    kept = old.table.filter(pa.array(live))
    if delta is not None:
        kept = pa.concat_tables([kept, delta.table.select(kept.column_names).cast(kept.schema)])
    n = kept.num_rows
    perm = pc.sort_indices(kept.select([k for k, _ in source.sort_keys]), sort_keys=source.sort_keys).to_numpy()
    inverse = np.empty(n, dtype=np.int64)
    inverse[perm] = np.arange(n)
    n_live = int(live.sum())
    new_row = np.full(len(live), -1, dtype=np.int64)
    new_row[np.flatnonzero(live)] = inverse[:n_live]
    added_rows = inverse[n_live:]
    added_vectors = np.asarray(delta.vectors, dtype=np.float32) if delta is not None else None

    ivf = old._indices.get("ann")
    if ivf is not None and not ivf.trained_on / 2 <= n <= ivf.trained_on * 2:
        return False  # the centroids no longer fit: rebuilt (and trained again)
    bm25 = files.load_bm25()

    def fill(tmp: Path) -> None:
        with pa.ipc.new_file(str(tmp / "rows.arrow"), kept.schema) as writer:
            for lo in range(0, n, WRITE_SLICE):
                writer.write_table(kept.take(pa.array(perm[lo : lo + WRITE_SLICE])))
        keys, rows = _merged_ids(old, live, new_row, delta, added_rows)
        np.save(tmp / "id_keys.npy", keys)
        np.save(tmp / "id_rows.npy", rows)
        dim = old.vectors.shape[1]
        added = added_vectors if added_vectors is not None else np.zeros((0, dim), dtype=np.float32)
        if ivf is not None:
            files.save_ivf(ivf.updated(new_row, added, added_rows), tmp)
        else:
            vectors = np.lib.format.open_memmap(tmp / "vectors.npy", mode="w+", dtype=np.float32, shape=(n, dim))
            vectors[new_row[live]] = np.asarray(old.vectors)[live]
            vectors[added_rows] = added
            vectors.flush()
            del vectors
        if bm25 is not None:
            text = delta.table.column("text") if delta is not None else pa.array([], pa.string())
            files.save_bm25(bm25.updated(new_row, text, added_rows, n), tmp)

    return files.publish(tenant, fingerprint, n, fill)


def _merged_ids(old: Rows, live: np.ndarray, new_row: np.ndarray, delta: Rows | None, added_rows: np.ndarray):
    """The id lookup (``IdPositions``) of the new rows: the old sorted ids kept, the added inserted."""
    keys, rows = np.asarray(old.position.keys), np.asarray(old.position.rows)
    kept = live[rows]
    keys, rows = keys[kept], new_row[rows[kept]]
    if delta is not None and len(added_rows):
        raw = np.array(delta.table.column("id").cast(pa.binary()).to_numpy(zero_copy_only=False), dtype=bytes)
        order = np.argsort(raw, kind="stable")
        raw, at = raw[order], added_rows[order]
        width = max(keys.dtype.itemsize, raw.dtype.itemsize)
        keys = keys.astype(f"S{width}")
        where = np.searchsorted(keys, raw.astype(f"S{width}"))
        keys = np.insert(keys, where, raw.astype(f"S{width}"))
        rows = np.insert(rows, where, at)
    return keys, rows.astype(np.int64)

