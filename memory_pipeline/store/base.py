"""One LanceDB base for every table: connection, commit lock, retries, open, read, upsert, delete,
full-text index and optimize, each driven by the table's spec (``store.tables``).

Every write is an idempotent upsert keyed by ``id`` (``merge_insert``) or a delete, so a rerun
never duplicates a row and a write that met a concurrent commit is safe to retry. The slices keep
thin repositories over this base with their domain verbs (``l0.store``, ``consolidation.store``,
``memories.store``).
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import threading
from collections.abc import Iterable, Sequence
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from memory_pipeline.store.lance_files import is_local
from memory_pipeline.store.tables import TableSpec

if TYPE_CHECKING:  # imported where a connection is made: LanceDB alone takes seconds to import,
    import lancedb  # and a query answered from recall's own files needs neither (recall/sources.py)
    import polars as pl

KEEP_VERSIONS_FOR = timedelta(days=7)
# Small writes (one typed memory, one audit row) each add a fragment, and every read opens them
# all; a table is compacted once it holds this many. LanceDB's own guide says to optimize after
# about 20 modifications (bench/notes.md has the measured store and read times).
COMPACT_AT_FRAGMENTS = 16


def fragment_count(table) -> int:
    """How many fragments a LanceDB table's current version holds (each small write adds one)."""
    return table.stats()["fragment_stats"]["num_fragments"]


def sql_str(value: str) -> str:
    """Quote a string literal for a LanceDB filter."""
    return "'" + value.replace("'", "''") + "'"


def sql_in(column: str, values: Iterable[str]) -> str:
    return f"{column} IN ({', '.join(sql_str(v) for v in values)})"


def stable_id(*parts: str) -> str:
    """A row id derived from what the row is about, so writing it again updates the same row."""
    return hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:32]


def _is_commit_conflict(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "conflict" in text or "retryable" in text or "concurrent" in text


def retry_on_conflict(write):
    """``write``, retried when it meets a concurrent commit: two writers committing to one table at
    once can conflict; LanceDB reports it and the write is safe to retry because every write here
    is an idempotent upsert or delete. (tenacity is imported on the first write: a one-shot query
    writes nothing and skips its import, 0.03 s.)"""
    retrying = None

    @functools.wraps(write)
    def retried(*args, **kwargs):
        nonlocal retrying
        if retrying is None:
            from tenacity import retry, retry_if_exception, stop_after_attempt, wait_exponential_jitter

            retrying = retry(
                retry=retry_if_exception(_is_commit_conflict),
                stop=stop_after_attempt(8),
                wait=wait_exponential_jitter(initial=0.05, max=2.0),
                reraise=True,
            )(write)
        return retrying(*args, **kwargs)

    return retried

COMMIT_LOCK = ".commit.lock"
_locks_held = threading.local()


@contextmanager
def commit_lock(uri: str):
    """Hold the database's commit lock (a local folder only; elsewhere Dagster pools serialize).

    LanceDB 0.40 raises no conflict when two ``merge_insert`` commits insert the same new id at
    once: both rows land, and the table holds a duplicate. Writers on one machine (threads,
    processes, several Dagster runs) therefore commit one at a time.
    """
    held = _locks_held.__dict__.setdefault("uris", set())
    if not is_local(uri) or uri in held:  # re-entrant: a write may call another write
        yield
        return
    path = Path(uri) / COMMIT_LOCK
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        held.add(uri)
        try:
            yield
        finally:
            held.discard(uri)
            fcntl.flock(handle, fcntl.LOCK_UN)


def retry_commit(method):
    """A store write: under the database's commit lock, retried on a commit conflict."""
    retrying = retry_on_conflict(method)

    @functools.wraps(method)
    def write(self, *args, **kwargs):
        with commit_lock(self.uri):
            return retrying(self, *args, **kwargs)

    return write


CACHE_MB_ENV = "MEMORY_PIPELINE_LANCE_CACHE_MB"


@functools.cache
def _session(mb: int) -> lancedb.Session:
    import lancedb

    return lancedb.Session(index_cache_size_bytes=mb << 20, metadata_cache_size_bytes=mb << 20)


def connect(uri: str):
    """A LanceDB connection; with MEMORY_PIPELINE_LANCE_CACHE_MB set, its index and metadata caches
    are bounded to that many MB each and shared by every connection of the process.

    Unset, LanceDB's default session applies. Those caches keep the index pages and file metadata
    that lookups read, and on a large first ingest they grow with every rebuilt index and new
    fragment: at 1M chunks, 256 MB caches cut the ingest's peak RSS by 190 MB at the same speed,
    32 MB caches by 540 MB but made its embedding and write steps 1.6 and 2.2 times slower
    (bench/notes.md). Searches read the same caches, which is why the bound is opt-in (set it for
    ingest runs).
    """
    import lancedb

    mb = os.environ.get(CACHE_MB_ENV, "").strip()
    if not mb:
        return lancedb.connect(uri)
    return lancedb.connect(uri, session=_session(int(mb)))


class LanceBase:
    """The tables of one LanceDB database (a local folder or any URI LanceDB accepts)."""

    def __init__(self, uri: str | Path, dim: int | None = None):
        self.uri = str(uri)
        if is_local(self.uri):
            Path(self.uri).mkdir(parents=True, exist_ok=True)
        self.dim = dim
        self._lock = threading.Lock()
        self._migrated: set[str] = set()

    @functools.cached_property
    def db(self) -> lancedb.DBConnection:
        """The connection, made on first use: a reader answered from recall's kept files
        (``recall.index.kept_reads``) never imports LanceDB."""
        return connect(self.uri)

    def table_names(self) -> list[str]:
        result = self.db.list_tables()
        names = getattr(result, "tables", result)
        return list(names)

    def has(self, spec: TableSpec) -> bool:
        return spec.name in self.table_names()

    def open(self, spec: TableSpec):
        """The table, created empty when missing and migrated to its spec's version when older;
        refused when its vectors have another size."""
        if spec.has_vector and self.dim is None:
            if self.has(spec):
                return self.migrate(spec, self.db.open_table(spec.name))
            raise RuntimeError(f"the {spec.name} table does not exist yet and no vector size is known")
        table = self.migrate(spec, self._open_or_create(spec.name, spec.schema(self.dim)))
        if spec.has_vector:
            size = getattr(table.schema.field("vector").type, "list_size", self.dim)
            if size != self.dim:
                raise RuntimeError(
                    f"the {spec.name} table in {self.uri} holds {size}-dimensional vectors but the "
                    f"embedder makes {self.dim}; after changing the embedding model, {spec.after_new_model}"
                )
        return table

    def migrate(self, spec: TableSpec, table):
        """Apply the spec's migrations the stored table lacks, in order, once per base (a table
        written at an earlier version keeps its rows and gains the columns later versions added)."""
        if spec.name in self._migrated:
            return table
        pending = spec.pending(table.schema.names)
        if pending:
            with commit_lock(self.uri):
                table = self.db.open_table(spec.name)  # another writer may have migrated it meanwhile
                for migration in spec.pending(table.schema.names):
                    table.add_columns(dict(migration.add_columns))
        self._migrated.add(spec.name)
        return table

    def _open_or_create(self, name: str, schema: pa.Schema):
        with self._lock:
            if name in self.table_names():
                return self.db.open_table(name)
            try:
                return self.db.create_table(name, schema=schema)
            except (OSError, ValueError, RuntimeError) as exc:
                # Another process created it between the check and the create.
                if "already exists" in str(exc).lower():
                    return self.db.open_table(name)
                raise

    def read(self, spec: TableSpec, where: str | None = None, columns: Sequence[str] | None = None) -> pl.DataFrame:
        """Rows matching ``where``; a missing table reads as an empty frame with the table's columns."""
        import polars as pl

        if not self.has(spec):
            schema = spec.schema(self.dim or 1)
            if columns:
                schema = pa.schema([schema.field(c) for c in columns])
            return pl.from_arrow(schema.empty_table())
        query = self.migrate(spec, self.db.open_table(spec.name)).search()
        if where:
            query = query.where(where)
        if columns:
            query = query.select(list(columns))
        return pl.from_arrow(query.limit(None).to_arrow())

    @retry_commit
    def upsert(self, spec: TableSpec, rows: pa.Table | list[dict], **options) -> int:
        """Insert rows, or update the rows with the same ``id``; returns how many were written."""
        if isinstance(rows, list):
            rows = pa.Table.from_pylist(rows, schema=spec.schema(self.dim))
        if rows.num_rows:
            self.open(spec).merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(
                rows, **options
            )
        return rows.num_rows

    @retry_commit
    def append(self, spec: TableSpec, rows: list[dict]) -> int:
        """Add rows that are new by construction (a log's events, each with a fresh id): no
        ``merge_insert``, which reads every id of the table to match them."""
        if rows:
            self.open(spec).add(pa.Table.from_pylist(rows, schema=spec.schema(self.dim)))
        return len(rows)

    @retry_commit
    def delete(self, spec: TableSpec, where: str) -> None:
        if self.has(spec):
            self.db.open_table(spec.name).delete(where)

    def fts_unindexed(self, spec: TableSpec) -> int:
        """Rows the table's full-text index does not cover yet (every row without the index)."""
        table = self.db.open_table(spec.name)
        for idx in table.list_indices():
            if idx.name == spec.fts_index:
                return int(table.index_stats(spec.fts_index).num_unindexed_rows)
        return table.count_rows()

    @retry_commit  # two runs creating the index at once conflict ("CreateIndex ... preempted")
    def ensure_fts(self, spec: TableSpec, rebuild: bool = False) -> bool:
        """Build the table's full-text index (and its scalar indices), or bring it up to date.

        An index built on an empty table covers nothing, so an empty table waits for rows (and a
        ``rebuild`` drops its stale index). Returns True when the index covers every row.
        """
        if not self.has(spec):
            return True
        table = self.db.open_table(spec.name)
        names = {idx.name for idx in table.list_indices()}
        if table.count_rows() == 0:
            if rebuild and spec.fts_index in names:
                table.drop_index(spec.fts_index)
            return True
        if rebuild or spec.fts_index not in names:
            table.create_fts_index(spec.fts, use_tantivy=False, replace=True, with_position=False, name=spec.fts_index)
            for column, kind in spec.scalar:
                if f"{column}_idx" not in names:
                    table.create_scalar_index(column, index_type=kind, replace=True)
        elif self.fts_unindexed(spec) > 0:
            table.optimize(cleanup_older_than=KEEP_VERSIONS_FOR)
        return self.fts_unindexed(spec) == 0

    @retry_commit
    def settle_table(self, spec: TableSpec) -> bool:
        """After a small write: build the table's full-text index if it has none yet, or optimize
        the table (compact it, bring its indices up to date) once it holds
        ``COMPACT_AT_FRAGMENTS`` fragments or more; True when it did either.

        Not an optimize after every small write: it also lists every version kept for
        ``KEEP_VERSIONS_FOR``: on object storage (moto's S3), the last ten of a hundred stores of a
        typed memory took 6.5 s each against 0.7 s for the first ten (``bench/memory_store.py``).
        """
        if not self.has(spec):
            return False
        table = self.db.open_table(spec.name)
        if spec.fts and spec.fts_index not in {idx.name for idx in table.list_indices()}:
            self.ensure_fts(spec)
            return True
        if fragment_count(table) < COMPACT_AT_FRAGMENTS:
            return False
        table.optimize(cleanup_older_than=KEEP_VERSIONS_FOR)
        return True

    def optimize(self, cleanup_older_than: timedelta = KEEP_VERSIONS_FOR) -> dict[str, str]:
        """Compact files, update indices and prune old versions of every table."""
        done = {}
        for name in self.table_names():
            self.db.open_table(name).optimize(cleanup_older_than=cleanup_older_than)
            done[name] = "optimized"
        return done
