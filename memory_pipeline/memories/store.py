"""LanceDB tables of typed memories: ``memories``, the append-only ``memory_audit`` log, and the
``memory_sources`` manifest that makes extraction incremental.

A memory's id is derived from its tenant, type and normalized content, so the same fact said in
two sessions (or stored twice through a tool) is one row, and a forgotten or skipped memory is
recognized when extraction meets it again. The audit never holds content: a row says which
memory, which operation, which fields changed, why, by which tool or run, and when.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pyarrow as pa

from memory_pipeline.store.lance import MemoryStore, _retry_commit, commit_lock, sql_in, sql_str
from memory_pipeline.store.purge import is_local, purge_table

MEMORIES = "memories"
MEMORY_AUDIT = "memory_audit"
MEMORY_SOURCES = "memory_sources"

MEMORY_TYPES = (
    "identity", "preference", "fact", "event", "decision", "goal", "routine", "observation",
    "todo", "anomaly",
)
INGESTION_SOURCES = ("markdown", "transcript", "live")
OPERATIONS = ("store", "update", "forget", "skip")
SOURCE_CHANGED = "source_changed"
"""Marks a removal by extraction (the file changed), which must not block the memory's return."""

_TS = pa.timestamp("us", tz="UTC")


def memories_schema(dim: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("tenant", pa.string(), nullable=False),
            pa.field("memory_type", pa.string(), nullable=False),
            pa.field("content", pa.string(), nullable=False),
            pa.field("reasoning", pa.string()),
            pa.field("occurred_at", _TS),
            pa.field("happens_at", _TS),
            pa.field("confidence", pa.float32(), nullable=False),
            pa.field("source", pa.string(), nullable=False),
            pa.field("source_ref", pa.string()),
            pa.field("model", pa.string()),
            pa.field("vector", pa.list_(pa.float32(), dim)),
            pa.field("created_at", _TS, nullable=False),
            pa.field("updated_at", _TS, nullable=False),
            pa.field("content_hash", pa.string(), nullable=False),
        ]
    )


AUDIT_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("tenant", pa.string(), nullable=False),
        pa.field("memory_id", pa.string(), nullable=False),
        pa.field("op", pa.string(), nullable=False),
        pa.field("memory_type", pa.string()),
        pa.field("fields", pa.list_(pa.string())),
        pa.field("reason", pa.string()),
        pa.field("actor", pa.string(), nullable=False),  # the tool or run that did it
        pa.field("at", _TS, nullable=False),
    ]
)

SOURCES_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("tenant", pa.string(), nullable=False),
        pa.field("path", pa.string(), nullable=False),
        pa.field("content_hash", pa.string(), nullable=False),
        pa.field("memory_ids", pa.list_(pa.string())),
        pa.field("options", pa.string()),  # extractor version and options the file was read with
        pa.field("extracted_at", _TS, nullable=False),
    ]
)

_SPACE_RE = re.compile(r"\s+")


def normalize_content(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    return _SPACE_RE.sub(" ", text).strip(" .!")


def content_hash(text: str) -> str:
    return hashlib.sha256(normalize_content(text).encode("utf-8", "surrogateescape")).hexdigest()


def memory_id(tenant: str, memory_type: str, content: str) -> str:
    digest = hashlib.sha256(f"{tenant}\x1f{memory_type}\x1f{normalize_content(content)}".encode())
    return "m_" + digest.hexdigest()[:24]


def now_utc() -> datetime:
    return datetime.now(UTC)


class GraphStore:
    """The typed-memory tables, in the same LanceDB database as the rest of the memory."""

    def __init__(self, uri: str | Path, dim: int):
        self.base = MemoryStore(uri, dim=dim)
        self.db = self.base.db
        self.uri = self.base.uri
        self.dim = dim

    # -- tables ---------------------------------------------------------------------------
    def has(self, name: str) -> bool:
        return name in self.base.table_names()

    def memories(self):
        table = self.base._open_or_create(MEMORIES, memories_schema(self.dim))
        size = getattr(table.schema.field("vector").type, "list_size", self.dim)
        if size != self.dim:
            raise RuntimeError(
                f"the memories table in {self.uri} holds {size}-dimensional vectors but the embedder "
                f"makes {self.dim}; after changing the embedding model, drop the memories table and "
                "run `memory-pipeline graph ingest` again (live memories must be stored again)"
            )
        return table

    def audit(self):
        return self.base._open_or_create(MEMORY_AUDIT, AUDIT_SCHEMA)

    def sources(self):
        return self.base._open_or_create(MEMORY_SOURCES, SOURCES_SCHEMA)

    def _read(self, name: str, where: str, columns: Sequence[str] | None = None) -> pl.DataFrame:
        if not self.has(name):
            return pl.DataFrame()
        query = self.db.open_table(name).search().where(where)
        if columns:
            query = query.select(list(columns))
        return pl.from_arrow(query.limit(None).to_arrow())

    # -- reads ----------------------------------------------------------------------------
    def memory_rows(self, tenants: str | Sequence[str], where: str | None = None, vectors: bool = False) -> pl.DataFrame:
        tenants = [tenants] if isinstance(tenants, str) else list(tenants)
        scope = sql_in("tenant", tenants) + (f" AND ({where})" if where else "")
        columns = [f.name for f in memories_schema(self.dim) if vectors or f.name != "vector"]
        frame = self._read(MEMORIES, scope, columns)
        if frame.is_empty() and not frame.columns:
            empty = pa.schema([f for f in memories_schema(self.dim) if f.name in columns]).empty_table()
            return pl.from_arrow(empty)
        return frame

    def get_memory(self, tenant: str, mid: str) -> dict | None:
        rows = self.memory_rows(tenant, f"id = {sql_str(mid)}")
        return rows.row(0, named=True) if rows.height else None

    def audit_rows(self, tenant: str, memory_id: str | None = None) -> pl.DataFrame:
        where = f"tenant = {sql_str(tenant)}" + (f" AND memory_id = {sql_str(memory_id)}" if memory_id else "")
        frame = self._read(MEMORY_AUDIT, where)
        return frame.sort("at") if frame.height else pl.from_arrow(AUDIT_SCHEMA.empty_table())

    def blocked_ids(self, tenant: str) -> set[str]:
        """Memories forgotten or skipped: extraction must not bring them back."""
        frame = self._read(MEMORY_AUDIT, f"tenant = {sql_str(tenant)} AND op IN ('forget', 'skip')", ["memory_id", "fields"])
        if not frame.height:
            return set()
        return {m for m, f in zip(frame["memory_id"].to_list(), frame["fields"].to_list()) if SOURCE_CHANGED not in (f or [])}

    def manifest(self, tenant: str) -> dict[str, dict]:
        frame = self._read(MEMORY_SOURCES, f"tenant = {sql_str(tenant)}")
        return {r["path"]: r for r in frame.iter_rows(named=True)} if frame.height else {}

    # -- writes ---------------------------------------------------------------------------
    @_retry_commit
    def upsert_memories(self, rows: list[dict]) -> None:
        if rows:
            table = pa.Table.from_pylist(rows, schema=memories_schema(self.dim))
            (
                self.memories().merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
                .execute(table, on_bad_vectors="null")  # a memory may wait for its embedding
            )

    @_retry_commit
    def append_audit(self, rows: list[dict]) -> None:
        if rows:
            for row in rows:
                row.setdefault("id", uuid.uuid4().hex)
                row.setdefault("at", now_utc())
                row.setdefault("fields", [])
            self.audit().add(pa.Table.from_pylist(rows, schema=AUDIT_SCHEMA))

    @_retry_commit
    def upsert_manifest(self, rows: list[dict]) -> None:
        if rows:
            table = pa.Table.from_pylist(rows, schema=SOURCES_SCHEMA)
            self.sources().merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(table)

    @_retry_commit
    def delete_manifest(self, tenant: str, paths: Sequence[str]) -> None:
        if paths and self.has(MEMORY_SOURCES):
            self.sources().delete(f"tenant = {sql_str(tenant)} AND {sql_in('path', paths)}")

    @_retry_commit
    def delete_memories(self, tenant: str, ids: Sequence[str]) -> None:
        if ids and self.has(MEMORIES):
            self.memories().delete(f"tenant = {sql_str(tenant)} AND {sql_in('id', ids)}")

    @_retry_commit
    def redact_audit(self, tenant: str, mid: str) -> None:
        """Drop the reasons of a memory's earlier audit rows: a reason may quote what is forgotten.

        The only change ever made to audit rows; the rows themselves (op, fields, actor, time) stay.
        """
        if self.has(MEMORY_AUDIT):
            where = f"tenant = {sql_str(tenant)} AND memory_id = {sql_str(mid)}"
            self.audit().update(where=where, values={"reason": None})

    def purge_deleted(self) -> None:
        """Leave no byte of deleted or redacted memory and audit rows (``store.purge.purge_table``).

        A delete or update in LanceDB only marks rows: their bytes stay in data files, in older
        versions and in the full-text index. Each table's live rows are rewritten in place, its
        indices rebuilt and its older versions removed, every step an ordinary commit retried on
        a conflict, never an overwrite from a snapshot: on object storage, where no commit lock
        keeps other writers out, a memory stored or updated meanwhile is kept.
        """
        # Writers on this machine wait while the tables are rewritten (see commit_lock).
        with commit_lock(self.uri):
            for name in (MEMORIES, MEMORY_AUDIT):
                if self.has(name):
                    purge_table(self.db.open_table(name), is_local(self.uri))

    def ensure_fts_index(self, rebuild: bool = False) -> None:
        """The full-text index on memory content, built or brought up to date."""
        if not self.has(MEMORIES):
            return
        table = self.db.open_table(MEMORIES)
        if table.count_rows() == 0:
            if rebuild and any(i.name == "content_idx" for i in table.list_indices()):
                table.drop_index("content_idx")
            return
        names = {idx.name for idx in table.list_indices()}
        if rebuild or "content_idx" not in names:
            table.create_fts_index("content", use_tantivy=False, replace=True, with_position=False, name="content_idx")
        elif int(table.index_stats("content_idx").num_unindexed_rows) > 0:
            table.optimize()
