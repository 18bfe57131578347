"""Counts of the memory graph: memories by type and by ingestion source, with and without an
embedding, and the relations of the knowledge graph."""

from __future__ import annotations

from memory_pipeline.knowledge.search import relation_counts
from memory_pipeline.memories.store import INGESTION_SOURCES, MEMORY_TYPES, GraphStore
from memory_pipeline.store.base import sql_in
from memory_pipeline.store.tables import MEMORY_AUDIT


def graph_stats(store: GraphStore, tenants: list[str]) -> dict:
    frame = store.memory_rows(tenants, vectors=True)
    by_type = {t: 0 for t in MEMORY_TYPES}
    by_source = {s: 0 for s in INGESTION_SOURCES}
    with_vec = 0
    if frame.height:
        for t, n in frame.group_by("memory_type").len().iter_rows():
            by_type[t] = n
        for s, n in frame.group_by("source").len().iter_rows():
            by_source[s] = n
        with_vec = frame.height - frame["vector"].null_count()
    ops = {}
    if store.has(MEMORY_AUDIT):
        audit = store.read(MEMORY_AUDIT, sql_in("tenant", tenants), ["op"])
        if audit.height:
            ops = dict(audit.group_by("op").len().iter_rows())
    return {
        "tenants": tenants,
        "memories": frame.height,
        "by_type": by_type,
        "by_source": by_source,
        "with_embedding": with_vec,
        "without_embedding": frame.height - with_vec,
        "audit": ops,
        "relations": relation_counts(store, tenants),
    }
