"""Counts of the typed memories: memories by type and by ingestion source, with and without an
embedding, and the relations of the knowledge graph; and the audit log itself, filtered."""

from __future__ import annotations

from datetime import datetime

from memory_pipeline.knowledge.search import relation_counts
from memory_pipeline.memories.operations import MemoryOperationError, check_type
from memory_pipeline.memories.store import INGESTION_SOURCES, MEMORY_TYPES, OPERATIONS, TypedMemoryStore
from memory_pipeline.recall.index.kept_reads import read_tenants
from memory_pipeline.store.tables import MEMORIES, MEMORY_AUDIT


def typed_memory_stats(store: TypedMemoryStore, tenants: list[str]) -> dict:
    """Read as recall reads a tenant (``recall.index.kept_reads``): a new process counts a small
    tenant's rows from the files kept at the tables' versions, without LanceDB."""
    frame = read_tenants(store.uri, MEMORIES, tenants, ["memory_type", "source", "vector"])
    by_type = {t: 0 for t in MEMORY_TYPES}
    by_source = {s: 0 for s in INGESTION_SOURCES}
    with_vec = 0
    if frame.height:
        for t, n in frame.group_by("memory_type").len().iter_rows():
            by_type[t] = n
        for s, n in frame.group_by("source").len().iter_rows():
            by_source[s] = n
        with_vec = frame.height - frame["vector"].null_count()
    audit = read_tenants(store.uri, MEMORY_AUDIT, tenants, ["op"])
    ops = dict(audit.group_by("op").len().iter_rows()) if audit.height else {}
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


MAX_AUDIT_ROWS = 1000
AUDIT_KEYS = ("at", "op", "memory_id", "memory_type", "fields", "reason", "actor", "tenant")


def audit_entries(
    store: TypedMemoryStore,
    tenants: list[str],
    *,
    ops: list[str] | None = None,
    memory_types: list[str] | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int = 50,
) -> list[dict]:
    """Audit rows of ``tenants``, newest first: which memory, what was done, which fields, why, by
    whom, when (never the content). ``until`` is exclusive."""
    unknown = sorted(set(ops or []) - set(OPERATIONS))
    if unknown:
        raise MemoryOperationError(f"unknown audit action {unknown[0]!r}: use one of {', '.join(OPERATIONS)}")
    if not isinstance(limit, int) or not 1 <= limit <= MAX_AUDIT_ROWS:
        raise MemoryOperationError(f"limit must be from 1 to {MAX_AUDIT_ROWS}, got {limit!r}")
    types = [check_type(t) for t in memory_types or []]
    if not tenants:
        return []
    # Read as ``typed_memory_stats`` reads it: a small tenant's audit from the file kept at the
    # table's version, without LanceDB.
    frame = read_tenants(store.uri, MEMORY_AUDIT, tenants)
    import polars as pl  # here, not at the top: the MCP server imports this module to start (polars: 0.15 CPU s)

    if ops:
        frame = frame.filter(pl.col("op").is_in(ops))
    if types:
        frame = frame.filter(pl.col("memory_type").is_in(types))
    if since is not None:
        frame = frame.filter(pl.col("at") >= since)
    if until is not None:
        frame = frame.filter(pl.col("at") < until)
    frame = frame.sort(["at", "id"], descending=True).head(limit) if frame.height else frame
    return [
        {k: (r[k].isoformat() if isinstance(r[k], datetime) else r[k]) for k in AUDIT_KEYS}
        for r in frame.iter_rows(named=True)
    ]
