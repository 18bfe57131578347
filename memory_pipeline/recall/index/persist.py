"""Recall's maintenance: persisting the indices of large tenants, so a new process's first query
reads them instead of rebuilding them (run by the nightly optimize schedule)."""

from __future__ import annotations

import pyarrow.compute as pc

from memory_pipeline.recall.index import files as index_files
from memory_pipeline.recall.rows import release_freed_memory
from memory_pipeline.recall.sources import ChunkSource, TenantCache


def persist_large_tenants(uri: str, ann_min_rows: int, ann_lists: int | None = None,
                          min_rows: int = 10_000) -> dict[str, int]:
    """Write the recall indices of every chunks tenant of ``min_rows`` rows or more whose
    persisted copy is missing or stale (maintenance: the next process's first query reads them),
    and fold the IVF tail of updated tenants into their lists.

    Returns {tenant: rows} of the tenants checked. One tenant is held at a time. On object
    storage they are written beside the tables, and kept in this machine's cache.
    """
    cache = TenantCache(uri, max_entries=1, persist_min_rows=min_rows)
    table = cache.table(ChunkSource.table)
    if table is None:
        return {}
    column = table.search().select(["tenant"]).limit(None).to_arrow().column("tenant")
    counts = {c["values"]: c["counts"] for c in pc.value_counts(column).to_pylist()}
    done: dict[str, int] = {}
    for tenant, n in sorted(counts.items()):
        if n < min_rows or index_files.tenant_files(uri, ChunkSource.table, tenant) is None:
            continue
        rows = cache.rows(ChunkSource(), tenant)
        rows.text_index()
        if ann_min_rows and len(rows) >= ann_min_rows:
            ann = rows.ann_index(ann_lists)
            if (len(ann.tail_order) or ann.dead) and rows.files is not None:
                # Rows added and deleted since the lists were written (``update.py``):
                # folded in, so queries scan one set of lists again.
                compacted = rows.files.compact_ivf(ann)
                rows._indices["ann"] = compacted
                rows.vectors = compacted.vectors()
                release_freed_memory()
        done[tenant] = len(rows)
    return done
