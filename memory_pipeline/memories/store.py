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
from typing import TYPE_CHECKING

from memory_pipeline.store.base import LanceBase, commit_lock, is_local, retry_commit, sql_in, sql_str
from memory_pipeline.store.purge import purge_table
from memory_pipeline.store.tables import MEMORIES, MEMORY_AUDIT, MEMORY_SOURCES, TableSpec

if TYPE_CHECKING:  # imported where a frame is made: polars takes 0.5 s to import
    import polars as pl

MEMORY_TYPES = (
    "identity", "preference", "fact", "event", "decision", "goal", "routine", "observation",
    "todo", "anomaly",
)
INGESTION_SOURCES = ("markdown", "transcript", "live")
OPERATIONS = ("store", "update", "forget", "skip")
SOURCE_CHANGED = "source_changed"
"""Marks a removal by extraction (the file changed), which must not block the memory's return."""

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


class TypedMemoryStore(LanceBase):
    """The typed-memory tables, in the same LanceDB database as the rest of the memory."""

    def memories(self):
        return self.open(MEMORIES)

    # -- reads ----------------------------------------------------------------------------
    def memory_rows(self, tenants: str | Sequence[str], where: str | None = None, vectors: bool = False) -> pl.DataFrame:
        tenants = [tenants] if isinstance(tenants, str) else list(tenants)
        scope = sql_in("tenant", tenants) + (f" AND ({where})" if where else "")
        columns = [c for c in MEMORIES.names if vectors or c != "vector"]
        return self.read(MEMORIES, scope, columns)

    def get_memory(self, tenant: str, mid: str) -> dict | None:
        rows = self.memory_rows(tenant, f"id = {sql_str(mid)}")
        return rows.row(0, named=True) if rows.height else None

    def audit_rows(self, tenant: str, memory_id: str | None = None) -> pl.DataFrame:
        where = f"tenant = {sql_str(tenant)}" + (f" AND memory_id = {sql_str(memory_id)}" if memory_id else "")
        return self.read(MEMORY_AUDIT, where).sort("at")

    def blocked_ids(self, tenant: str) -> set[str]:
        """Memories forgotten or skipped: extraction must not bring them back."""
        frame = self.read(MEMORY_AUDIT, f"tenant = {sql_str(tenant)} AND op IN ('forget', 'skip')", ["memory_id", "fields"])
        return {m for m, f in zip(frame["memory_id"].to_list(), frame["fields"].to_list()) if SOURCE_CHANGED not in (f or [])}

    def manifest(self, tenant: str) -> dict[str, dict]:
        frame = self.read(MEMORY_SOURCES, f"tenant = {sql_str(tenant)}")
        return {r["path"]: r for r in frame.iter_rows(named=True)}

    # -- writes ---------------------------------------------------------------------------
    def upsert_memories(self, rows: list[dict]) -> None:
        self.upsert(MEMORIES, rows, on_bad_vectors="null")  # a memory may wait for its embedding

    def append_audit(self, rows: list[dict]) -> None:
        for row in rows:
            row.setdefault("id", uuid.uuid4().hex)
            row.setdefault("at", now_utc())
            row.setdefault("fields", [])
        self.append(MEMORY_AUDIT, rows)

    def upsert_manifest(self, rows: list[dict]) -> None:
        self.upsert(MEMORY_SOURCES, rows)

    def delete_manifest(self, tenant: str, paths: Sequence[str]) -> None:
        if paths:
            self.delete(MEMORY_SOURCES, f"tenant = {sql_str(tenant)} AND {sql_in('path', paths)}")

    def delete_memories(self, tenant: str, ids: Sequence[str]) -> None:
        if ids:
            self.delete(MEMORIES, f"tenant = {sql_str(tenant)} AND {sql_in('id', ids)}")

    @retry_commit
    def redact_audit(self, tenant: str, mid: str) -> None:
        """Drop the reasons of a memory's earlier audit rows: a reason may quote what is forgotten.

        The only change ever made to audit rows; the rows themselves (op, fields, actor, time) stay.
        """
        if self.has(MEMORY_AUDIT):
            where = f"tenant = {sql_str(tenant)} AND memory_id = {sql_str(mid)}"
            self.open(MEMORY_AUDIT).update(where=where, values={"reason": None})

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
            for spec in (MEMORIES, MEMORY_AUDIT):
                if self.has(spec):
                    purge_table(self.db.open_table(spec.name), is_local(self.uri))
            # Recall keeps small tenants' reads of the memories table (``recall/index/files.py``),
            # and each tenant's last working memory and bulletins are kept whole
            # (``memories/context_file.py``).
            from memory_pipeline.memories.context_file import FOLDER as KEPT_SECTIONS
            from memory_pipeline.recall.index.files import forget_table_files

            forget_table_files(self.uri, MEMORIES.name)
            forget_table_files(self.uri, KEPT_SECTIONS)

    def settle(self, *specs: TableSpec) -> None:
        """After a small write: the tables it added a fragment to (by default the memory and audit
        tables an operation writes) compacted once they hold many (``settle_table``)."""
        for spec in specs or (MEMORIES, MEMORY_AUDIT):
            self.settle_table(spec)

    def ensure_fts_index(self, rebuild: bool = False) -> None:
        """The full-text index on memory content, built or brought up to date."""
        self.ensure_fts(MEMORIES, rebuild=rebuild)
