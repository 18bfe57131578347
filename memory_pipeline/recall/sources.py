"""Where recall reads from: sources over LanceDB tables, and a per-tenant row cache.

A source names the table it reads and turns that table's rows into ``Rows``, the common shape
recall scores. ``memory`` and ``sessions`` both live in the ``chunks`` table; ``episodes`` (and
later ``facts``) have tables of their own, and a source whose table does not exist yet is
skipped. Which sources there are by name is ``registry.py``'s.

The vector channel scans an in-memory matrix of one tenant's vectors: LanceDB's flat scan is
28-44x slower than NumPy over the same vectors (DESIGN §10). The matrix is loaded once per
(database, table, tenant) and reloaded when the table's version moves, so a write is seen by the
next query. Every read is filtered by tenant inside LanceDB (prefilter); no row of another tenant
ever enters a cache entry. The full-text channel ranks the same cached rows with a BM25 index
of the tenant's own (``bm25.py``), built when first needed.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from memory_pipeline.recall.index import files as index_files
from memory_pipeline.recall.index import kept_reads
from memory_pipeline.recall.index import update as index_update
from memory_pipeline.recall.rows import (
    Rows,
    release_freed_memory,
    rows_fingerprint,
    sorted_without_vectors,
    vector_matrix,
)
from memory_pipeline.store import lance_files
from memory_pipeline.store.base import sql_str
from memory_pipeline.store.tables import CHUNKS, EPISODES

log = logging.getLogger(__name__)

__all__ = ["Rows", "RecallSource", "ChunkSource", "EpisodeSource", "TenantCache", "tenant_cache"]

class RecallSource:
    """A kind of memory recall can search. Subclasses say which table and how rows read."""

    names: tuple[str, ...] = ()
    table: str = ""
    text_column: str = "text"
    columns: tuple[str, ...] = ()
    # Columns whose values, over a tenant's rows, change whenever anything recall reads of them
    # changes (a content-addressed id and the write time): empty when the table has none.
    fingerprint: tuple[str, ...] = ()

    def to_rows(self, tenant: str, arrow: pa.Table) -> Rows:
        raise NotImplementedError


class ChunkSource(RecallSource):
    """Markdown notes (``memory``) and transcript windows (``sessions``) of the L0 index."""

    names = ("memory", "sessions")
    table = CHUNKS.name
    # A chunk's id hashes its tenant, file, lines and text, and every write stamps updated_at
    # (re-embedding with another model included); moving rows between files (compaction,
    # forget's rewrite of other tenants) changes neither.
    fingerprint = ("id", "updated_at")
    columns = (
        "id", "source", "path", "start_line", "end_line", "turn_ids", "text", "text_hash",
        "file_date", "ts_start", "vector",
    )

    # The order of a tenant's rows: by file, then lines (neighbouring windows are adjacent).
    sort_keys = [("source", "ascending"), ("path", "ascending"), ("start_line", "ascending"), ("end_line", "ascending")]

    def to_rows(self, tenant: str, arrow: pa.Table) -> Rows:
        vectors_in = arrow
        arrow, order = sorted_without_vectors(arrow, self.sort_keys)
        # Arrow columns, read a row at a time (``Rows.from_table``), and what a snapshot stores.
        table = pa.table({
            "id": arrow.column("id"),
            "source": arrow.column("source"),
            "path": arrow.column("path"),
            "start_line": arrow.column("start_line"),
            "end_line": arrow.column("end_line"),
            "turn_ids": arrow.column("turn_ids"),
            "text": arrow.column("text"),
            "text_hash": arrow.column("text_hash"),
            "day": arrow.column("file_date"),
            "when": arrow.column("ts_start"),
        })
        if "updated_at" in arrow.column_names:  # what a snapshot's update compares (``index.update``)
            table = table.append_column("updated_at", arrow.column("updated_at"))
        return Rows.from_table(tenant, table, vector_matrix(vectors_in, order))


class EpisodeSource(RecallSource):
    """Episodic summaries of consolidated sessions (table ``episodes``), once they exist.

    An episode cites the transcript lines it summarizes and carries their turn ids; it is dated by
    its session (``completed_at``), not by the day consolidation built it. Episodes do not decay
    here; past ``expires_at`` they are not recalled (pruning removes them later).
    """

    names = ("episodes",)
    table = EPISODES.name
    text_column = "summary"
    columns = ("id", "path", "start_line", "end_line", "turn_ids", "summary", "vector", "created_at", "completed_at",
               "expires_at")

    def to_rows(self, tenant: str, arrow: pa.Table) -> Rows:
        vectors_in = arrow
        arrow, order = sorted_without_vectors(arrow, [("created_at", "ascending")])
        n = arrow.num_rows
        ids = arrow.column("id").to_pylist()
        names = set(arrow.schema.names)

        def column(name, default):
            return arrow.column(name).to_pylist() if name in names else [default(i) for i in ids]

        return Rows(
            tenant=tenant,
            ids=ids,
            source=np.array(["episodes"] * n, dtype=object),
            path=column("path", lambda i: f"episodes/{i}"),
            start_line=np.asarray(column("start_line", lambda i: 1), dtype=np.int64),
            end_line=np.asarray(column("end_line", lambda i: 1), dtype=np.int64),
            turn_ids=[list(t or []) for t in column("turn_ids", lambda i: [])],
            text=arrow.column("summary").to_pylist(),
            text_hash=[f"episode:{i}" for i in ids],
            day=[None] * n,
            when=[said or built for said, built in zip(column("completed_at", lambda i: None),
                                                      arrow.column("created_at").to_pylist(), strict=True)],
            vectors=vector_matrix(vectors_in, order),
            expires=column("expires_at", lambda i: None),
        )


class TenantCache:
    """Rows of one database per (table, tenant), checked again when the table version changes.

    Every version change of a table is a write by some tenant. A cached tenant of at least
    ``fingerprint_min_rows`` rows is then re-read only if its own rows changed: its fingerprint
    columns (``RecallSource.fingerprint``) are read and compared, 0.8 s for 1M rows against 30 s
    to reload them and rebuild their indices. Smaller tenants are simply reloaded.

    A tenant of at least ``persist_min_rows`` rows of a source with a fingerprint (the chunks) is
    also written to disk once read, with its indices as they are built (``index/files.py``), and
    a new process reads that copy back memory-mapped instead of the table whenever the
    fingerprint still matches; when it does not, that copy is updated from the rows that changed
    (``index/update.py``) instead of rebuilt. Smaller tenants, episodes and facts are read and built in memory;
    ``persist_min_rows=None`` turns persistence off (neither read nor written).

    LanceDB is connected to only when rows must be read from it: the tables and their versions of
    a local database are read from its folder (``store/lance_files.py``), and a smaller tenant's
    read of any table is kept beside the persisted indices with the table version it was read at
    (``read_tenant``), so while no table has moved a new process answers without importing
    LanceDB (2-3 s of CPU, most of a one-shot query).
    """

    def __init__(
        self, uri: str, max_entries: int = 64, fingerprint_min_rows: int = 20_000,
        persist_min_rows: int | None = 10_000,
    ):
        self.uri = uri
        self._db = None
        self._connecting = threading.Lock()
        self._tables: dict[str, object] = {}
        self._rows: OrderedDict[tuple[str, str], tuple[int, Rows]] = OrderedDict()
        self._reads: OrderedDict[tuple, pa.Table] = OrderedDict()
        self._lock = threading.Lock()
        self._loading: dict[tuple[str, str], threading.Lock] = {}
        self._pinned = threading.local()
        self.max_entries = max_entries
        self.fingerprint_min_rows = fingerprint_min_rows
        self.persist_min_rows = persist_min_rows

    @contextmanager
    def pinned(self):
        """Within (one search, in this thread), each table's version and the list of tables are
        read once: the query sees one state of the database, and each read is a round trip to
        LanceDB's event loop thread (six per search before, several ms on a loaded machine)."""
        outer = getattr(self._pinned, "state", None)
        if outer is None:
            self._pinned.state = {}
        try:
            yield self
        finally:
            if outer is None:
                self._pinned.state = None

    def _once(self, key: str, read):
        state = getattr(self._pinned, "state", None)
        if state is None:
            return read()
        if key not in state:
            state[key] = read()
        return state[key]

    @property
    def db(self):
        """The LanceDB connection, made on first use."""
        with self._connecting:
            if self._db is None:
                import lancedb

                # Every read checks the latest version, so a write is visible to the next query.
                self._db = lancedb.connect(self.uri, read_consistency_interval=timedelta(0))
            return self._db

    def table_names(self) -> set[str]:
        def read() -> set[str]:
            local = lance_files.table_names(self.uri)
            if local is not None:
                return local
            result = self.db.list_tables()
            return set(getattr(result, "tables", result))

        return self._once("", read)

    def table(self, name: str):
        table = self._tables.get(name)
        if table is None:
            if name not in self.table_names():
                return None
            table = self._tables[name] = self.db.open_table(name)
        return table

    def version(self, name: str) -> int | None:
        """The table's latest version (None when it does not exist), read once per pinned query."""

        def read() -> int | None:
            if name not in self.table_names():
                return None
            local = lance_files.latest_version(self.uri, name)
            if local is not None:
                return local
            table = self.table(name)
            return None if table is None else table.version

        return self._once(f"version:{name}", read)

    def rows(self, source: RecallSource, tenant: str) -> Rows | None:
        version = self.version(source.table)
        if version is None:
            return None
        key = (source.table, tenant)
        with self._lock:
            hit = self._rows.get(key)
            if hit is not None and hit[0] == version:
                self._rows.move_to_end(key)
                return hit[1]
            loading = self._loading.setdefault(key, threading.Lock())
        # The text and vector channels of one query ask at the same moment: one loads, the
        # other waits for its rows instead of reading the same tenant twice.
        with loading:
            with self._lock:
                hit = self._rows.get(key)
                if hit is not None and hit[0] == version:
                    return hit[1]
            if hit is not None and self._unchanged(source, tenant, hit[1]):
                with self._lock:
                    self._rows[key] = (version, hit[1])
                    self._rows.move_to_end(key)
                return hit[1]
            return self._load(source, tenant, version, key)

    def read_tenant(self, name: str, tenant: str, columns: list[str]) -> pa.Table:
        """The tenant's rows of table ``name``, the ``columns`` of them the table has. A read of
        fewer than ``persist_min_rows`` rows is kept with the table's version, and read back
        instead of LanceDB until the table moves (local databases, persistence on); in a process
        that stays up, it is also kept in memory for that version."""
        version = self.version(name)
        memo = (name, tenant, tuple(columns), version)
        with self._lock:
            hit = self._reads.get(memo)
            if hit is not None:
                self._reads.move_to_end(memo)
                return hit
        arrow = self._read_tenant(name, tenant, columns, version)
        if arrow.num_rows < self.kept_below:
            with self._lock:
                self._reads[memo] = arrow
                while len(self._reads) > self.max_entries:
                    self._reads.popitem(last=False)
        return arrow

    @property
    def kept_below(self) -> int:
        """A tenant's read of fewer rows is held for its table's version (and kept on disk when
        persistence is on): ``read_tenant``."""
        return self.persist_min_rows or self.fingerprint_min_rows

    def _read_tenant(self, name: str, tenant: str, columns: list[str], version: int | None) -> pa.Table:
        files = None
        if self.persist_min_rows is not None:
            files = index_files.tenant_files(self.uri, name, tenant)
        stamp = index_files.table_stamp(self.uri, name, version) if files is not None else None
        kept = kept_reads.kept_read(files.tenant_dir, stamp, columns) if files is not None else None
        if kept is not None:
            return kept
        table = self.table(name)
        present = set(table.schema.names)
        arrow = self._read(table, tenant, [c for c in columns if c in present])
        if files is not None and arrow.num_rows < self.persist_min_rows:
            kept_reads.keep_read(files.tenant_dir, stamp, columns, arrow)
        return arrow

    def _read(self, table, tenant: str, columns: list[str]) -> pa.Table:
        return (
            table.search()
            .where(f"tenant = {sql_str(tenant)}", prefilter=True)
            .select(columns)
            .limit(None)
            .to_arrow()
        )

    def _unchanged(self, source: RecallSource, tenant: str, rows: Rows) -> bool:
        """Whether the tenant's rows are still those cached (another tenant wrote)."""
        if rows.fingerprint is None or len(rows) < self.fingerprint_min_rows:
            return False
        current = self._read(self.table(source.table), tenant, list(source.fingerprint))
        return rows_fingerprint(current, source.fingerprint) == rows.fingerprint

    def _load(self, source: RecallSource, tenant: str, version: int, key) -> Rows:
        persist = source.fingerprint and self.persist_min_rows is not None
        files = index_files.tenant_files(self.uri, source.table, tenant) if persist else None
        rows = None
        stamp = index_files.table_stamp(self.uri, source.table, version) if files is not None else None
        if files is not None and files.has_any():
            # The table is as it was when the tenant's fingerprint was last found current: nothing
            # to read. Else reading the fingerprint columns takes 0.7 s at 1M rows; the rows, 13 s.
            known = files.checked(stamp)
            rows = files.load(tenant, known) if known else None
        if rows is None and files is not None and files.has_any():
            table = self.table(source.table)
            current = self._read(table, tenant, list(source.fingerprint))
            fingerprint = rows_fingerprint(current, source.fingerprint)
            rows = files.load(tenant, fingerprint) if fingerprint else None
            if rows is None and fingerprint and len(current) >= self.persist_min_rows:
                rows = self._update(source, table, tenant, files, current, fingerprint)
            del current
        if rows is None:
            rows = self._read_rows(source, tenant)
            if files is not None and len(rows) < self.persist_min_rows:
                files.clear()  # a tenant that shrank below the size worth persisting
            elif files is not None and rows.fingerprint:
                files.snapshot(rows)
                # Served from the snapshot from now on: its pages, not a copy in the process.
                mapped = files.load(tenant, rows.fingerprint)
                rows = rows if mapped is None else mapped
                release_freed_memory()
        if files is not None and rows.files is files and files.folder is not None:
            files.mark_checked(stamp)
        with self._lock:
            self._rows[key] = (version, rows)
            self._rows.move_to_end(key)
            while len(self._rows) > self.max_entries:
                self._rows.popitem(last=False)
        return rows

    def _update(
        self, source: RecallSource, table, tenant: str, files, current: pa.Table, fingerprint: str
    ) -> Rows | None:
        """The tenant's persisted indices updated from its changed rows (``index/update.py``)."""
        present = set(table.schema.names)
        columns = [c for c in dict.fromkeys(source.columns + source.fingerprint) if c in present]

        def read_since(since: pa.Scalar) -> pa.Table:
            micros = pc.cast(since, pa.int64()).as_py()
            stamp = datetime.fromtimestamp(micros // 1_000_000, UTC).replace(microsecond=micros % 1_000_000)
            return (
                table.search()
                .where(f"tenant = {sql_str(tenant)} AND updated_at >= timestamp '{stamp:%Y-%m-%d %H:%M:%S.%f}'",
                       prefilter=True)
                .select(columns)
                .limit(None)
                .to_arrow()
            )

        try:
            return index_update.updated_rows(files, source, tenant, current, fingerprint, read_since)
        except Exception as exc:  # noqa: BLE001 - an update that fails must not fail the search: rebuilt
            log.warning("recall index of %s not updated (%r): rebuilt from the table", tenant, exc)
            return None

    def _read_rows(self, source: RecallSource, tenant: str) -> Rows:
        columns = list(dict.fromkeys(source.columns + source.fingerprint))
        arrow = self._read_tenant(source.table, tenant, columns, self.version(source.table))
        rows = source.to_rows(tenant, arrow)
        rows.fingerprint = rows_fingerprint(arrow, source.fingerprint)
        del arrow
        release_freed_memory()
        return rows

    def text_hits(
        self, source: RecallSource, tenants: list[str], names: list[str], query: str, limit: int
    ) -> dict[tuple[str, str], float]:
        """BM25 scores {(tenant, id): score}: each tenant's best ``limit`` rows, from its own index."""
        hits: dict[tuple[str, str], float] = {}
        if not query.strip():
            return hits
        for tenant in tenants:
            rows = self.rows(source, tenant)
            if rows is None or not len(rows):
                continue
            allowed = rows.source_mask(tuple(names)) if len(names) < len(source.names) else None
            top, scores = rows.text_index().top(query, limit, allowed)
            for i, score in zip(top.tolist(), scores.tolist()):
                hits[(tenant, rows.ids[i])] = score
        return hits

    def text_full_match(self, source: RecallSource, tenants: list[str], query: str, words: int = 0) -> float:
        """The highest of the tenants' full matches of ``query`` (``TextIndex.full_match``)."""
        best = 0.0
        for tenant in tenants:
            rows = self.rows(source, tenant)
            if rows is not None and len(rows):
                best = max(best, rows.text_index().full_match(query, words))
        return best


_CACHES: dict[str, TenantCache] = {}
_CACHES_LOCK = threading.Lock()


def tenant_cache(uri: str) -> TenantCache:
    """The process-wide cache of one database."""
    with _CACHES_LOCK:
        cache = _CACHES.get(uri)
        if cache is None:
            cache = _CACHES[uri] = TenantCache(uri)
        return cache
