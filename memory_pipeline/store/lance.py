"""LanceDB access for the L0 index: the chunks table, the file manifest and the embedding cache.

Every write is an upsert keyed by ``id`` (``merge_insert``), so a rerun never duplicates a row,
or, on a local folder, an append of rows whose ids were checked absent under the commit lock (new
cache vectors, the first chunks of a file), which is as safe and much cheaper on a large ingest.
Replacing a file's chunks is one ``merge_insert`` that also deletes the file's rows that are not
in the new version: LanceDB commits it as one version, so a reader sees the old chunks or the new
ones, never both and never neither.
"""

from __future__ import annotations

import fcntl
import functools
import logging
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import lancedb
import numpy as np
import polars as pl
import pyarrow as pa
from tenacity import retry, retry_if_exception, stop_after_attempt, wait_exponential_jitter

log = logging.getLogger(__name__)

CHUNKS = "chunks"
FILES = "files"
EMBEDDING_CACHE = "embedding_cache"


def chunks_schema(dim: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("tenant", pa.string(), nullable=False),
            pa.field("agent_id", pa.string(), nullable=False),
            pa.field("user_id", pa.string(), nullable=False),
            pa.field("path", pa.string(), nullable=False),
            pa.field("source", pa.string(), nullable=False),
            pa.field("start_line", pa.int32(), nullable=False),
            pa.field("end_line", pa.int32(), nullable=False),
            pa.field("heading", pa.string()),
            pa.field("turn_ids", pa.list_(pa.string())),
            pa.field("text", pa.string(), nullable=False),
            pa.field("text_hash", pa.string(), nullable=False),
            pa.field("file_hash", pa.string(), nullable=False),
            pa.field("model", pa.string(), nullable=False),
            pa.field("vector", pa.list_(pa.float32(), dim)),
            pa.field("file_date", pa.date32()),
            pa.field("ts_start", pa.timestamp("us", tz="UTC")),
            pa.field("updated_at", pa.timestamp("us", tz="UTC"), nullable=False),
        ]
    )


FILES_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("tenant", pa.string(), nullable=False),
        pa.field("path", pa.string(), nullable=False),
        pa.field("kind", pa.string(), nullable=False),
        pa.field("status", pa.string(), nullable=False),
        pa.field("reason", pa.string()),
        pa.field("content_hash", pa.string()),
        pa.field("size", pa.int64(), nullable=False),
        pa.field("mtime_ns", pa.int64(), nullable=False),
        pa.field("model", pa.string()),
        pa.field("chunk_count", pa.int32(), nullable=False),
        pa.field("indexed_at", pa.timestamp("us", tz="UTC"), nullable=False),
    ]
)

CACHE_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("model", pa.string(), nullable=False),
        pa.field("text_hash", pa.string(), nullable=False),
        pa.field("vector", pa.list_(pa.float32())),
    ]
)


def sql_str(value: str) -> str:
    """Quote a string literal for a LanceDB filter."""
    return "'" + value.replace("'", "''") + "'"


def sql_in(column: str, values: Iterable[str]) -> str:
    return f"{column} IN ({', '.join(sql_str(v) for v in values)})"


def _is_commit_conflict(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "conflict" in text or "retryable" in text or "concurrent" in text


# Two writers committing to one table at once can conflict; LanceDB reports it and the write is
# safe to retry because every write here is an idempotent upsert or delete.
_retry_on_conflict = retry(
    retry=retry_if_exception(_is_commit_conflict),
    stop=stop_after_attempt(8),
    wait=wait_exponential_jitter(initial=0.05, max=2.0),
    reraise=True,
)

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
    if "://" in uri or uri in held:  # re-entrant: a write may call another write
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


def _retry_commit(method):
    """A store write: under the database's commit lock, retried on a commit conflict."""
    retrying = _retry_on_conflict(method)

    @functools.wraps(method)
    def write(self, *args, **kwargs):
        uri = getattr(self, "uri", None) or self.base.uri
        with commit_lock(uri):
            return retrying(self, *args, **kwargs)

    return write


CACHE_MB_ENV = "MEMORY_PIPELINE_LANCE_CACHE_MB"


@functools.cache
def _session(mb: int) -> lancedb.Session:
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
    mb = os.environ.get(CACHE_MB_ENV, "").strip()
    if not mb:
        return lancedb.connect(uri)
    return lancedb.connect(uri, session=_session(int(mb)))


class MemoryStore:
    """The L0 tables of one LanceDB database (a local folder or any URI LanceDB accepts)."""

    def __init__(self, uri: str | Path, dim: int | None = None):
        self.uri = str(uri)
        if "://" not in self.uri:
            Path(self.uri).mkdir(parents=True, exist_ok=True)
        self.db = connect(self.uri)
        self.dim = dim
        self._lock = threading.Lock()

    # -- tables ---------------------------------------------------------------------------
    def table_names(self) -> list[str]:
        result = self.db.list_tables()
        names = getattr(result, "tables", result)
        return list(names)

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

    def chunks(self):
        if self.dim is None:
            if CHUNKS in self.table_names():
                return self.db.open_table(CHUNKS)
            raise RuntimeError("the chunks table does not exist yet and no vector size is known")
        table = self._open_or_create(CHUNKS, chunks_schema(self.dim))
        existing = table.schema.field("vector").type
        if getattr(existing, "list_size", self.dim) != self.dim:
            raise RuntimeError(
                f"the chunks table in {self.uri} holds {existing.list_size}-dimensional vectors but "
                f"the embedder makes {self.dim}; after changing the embedding model, delete the "
                "chunks and files tables (or point MEMORY_PIPELINE_LANCEDB_URI elsewhere) and "
                "backfill every tenant"
            )
        return table

    def files(self):
        return self._open_or_create(FILES, FILES_SCHEMA)

    def cache(self):
        return self._open_or_create(EMBEDDING_CACHE, CACHE_SCHEMA)

    # -- manifest -------------------------------------------------------------------------
    def manifest(self, tenant: str) -> pl.DataFrame:
        """The manifest rows of one tenant (empty frame with the schema when none)."""
        table = self.files()
        arrow = table.search().where(f"tenant = {sql_str(tenant)}").limit(None).to_arrow()
        return pl.from_arrow(arrow) if arrow.num_rows else pl.from_arrow(FILES_SCHEMA.empty_table())

    @_retry_commit
    def upsert_files(self, rows: pa.Table) -> None:
        if rows.num_rows:
            (
                self.files()
                .merge_insert("id")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .execute(rows)
            )

    @_retry_commit
    def delete_files(self, tenant: str, paths: Sequence[str]) -> None:
        if paths:
            self.files().delete(f"tenant = {sql_str(tenant)} AND {sql_in('path', paths)}")

    # -- embedding cache ------------------------------------------------------------------
    def cached_hashes(self, model: str, text_hashes: Sequence[str]) -> set[str]:
        """Which of these text hashes already have a vector from ``model`` (reads no vectors)."""
        if not text_hashes or EMBEDDING_CACHE not in self.table_names():
            return set()
        table = self.cache()
        found: set[str] = set()
        unique = sorted(set(text_hashes))
        for start in range(0, len(unique), 4000):
            ids = [f"{model}|{h}" for h in unique[start : start + 4000]]
            arrow = table.search().where(sql_in("id", ids)).select(["text_hash"]).limit(None).to_arrow()
            found.update(arrow.column("text_hash").to_pylist())
        return found

    def cached_vectors(self, model: str, text_hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """Vectors already computed by ``model`` for these text hashes."""
        if not text_hashes or EMBEDDING_CACHE not in self.table_names():
            return {}
        table = self.cache()
        found: dict[str, np.ndarray] = {}
        unique = sorted(set(text_hashes))
        for start in range(0, len(unique), 2000):
            ids = [f"{model}|{h}" for h in unique[start : start + 2000]]
            arrow = (
                table.search()
                .where(sql_in("id", ids))
                .select(["text_hash", "vector"])
                .limit(None)
                .to_arrow()
            )
            if arrow.num_rows:
                hashes = arrow.column("text_hash").to_pylist()
                flat = arrow.column("vector").combine_chunks()
                matrix = np.asarray(flat.flatten().to_numpy(zero_copy_only=False), dtype=np.float32)
                matrix = matrix.reshape(len(hashes), -1)
                found.update(zip(hashes, matrix))
        return found

    @_retry_commit
    def put_cached_vectors(self, model: str, text_hashes: Sequence[str], vectors: np.ndarray) -> int:
        """Cache these vectors; a text hash already cached for ``model`` keeps its vector.

        Returns how many rows were added. On a local folder the rows are appended (``add``)
        after dropping the hashes already cached: the check and the append happen under the
        commit lock, which every writer of the database on this machine holds to commit, so no
        other writer can add the same id in between and the cache never holds an id twice. An
        append writes only the new rows; a ``merge_insert`` joins them against the whole cache
        and cost three times the time per block on a large first ingest. Elsewhere (object
        storage, no lock) the rows are upserted with ``merge_insert`` as before.
        """
        if not len(text_hashes):
            return 0
        local = "://" not in self.uri
        if local:
            cached = self.cached_hashes(model, text_hashes)
            keep = [i for i, h in enumerate(text_hashes) if h not in cached]
            if len(keep) < len(text_hashes):
                text_hashes = [text_hashes[i] for i in keep]
                vectors = vectors[keep]
            if not text_hashes:
                return 0
        dim = vectors.shape[1]
        rows = pa.table(
            {
                "id": [f"{model}|{h}" for h in text_hashes],
                "model": [model] * len(text_hashes),
                "text_hash": list(text_hashes),
                "vector": pa.FixedSizeListArray.from_arrays(
                    pa.array(vectors.astype(np.float32).ravel()), dim
                ).cast(pa.list_(pa.float32())),
            },
            schema=CACHE_SCHEMA,
        )
        if local:
            self.cache().add(rows)
        else:
            (
                self.cache()
                .merge_insert("id")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .execute(rows)
            )
        return rows.num_rows

    # -- chunks ---------------------------------------------------------------------------
    @_retry_commit
    def replace_file_chunks(
        self,
        tenant: str,
        paths: Sequence[str],
        rows: pa.Table | Callable[[], pa.RecordBatchReader],
        empty: bool | None = None,
    ) -> None:
        """Make the chunks of ``paths`` in ``tenant`` exactly ``rows``, in one commit.

        Rows whose id is present are updated, new ids inserted, and rows of those paths that are
        not in ``rows`` deleted (a changed file's old chunks, or every chunk of a deleted file).
        ``rows`` is a table, or a function returning a fresh stream of batches (so a retried
        commit can read them again).
        """
        if not paths:
            return
        table = self.chunks()
        scope = f"tenant = {sql_str(tenant)} AND {sql_in('path', paths)}"
        if empty is None:
            empty = isinstance(rows, pa.Table) and rows.num_rows == 0
        if empty:
            table.delete(scope)
            return
        if "://" not in self.uri and table.count_rows(scope) == 0:
            # Nothing of these paths is stored (their first ingest): there is nothing to update
            # or delete, and a chunk id is derived from its tenant and path, so no other row can
            # hold one of these ids. An append streams the rows into new files; a merge_insert
            # would join them against the table first. Under the commit lock no other writer
            # can add rows of these paths between the count and the append.
            table.add(rows if isinstance(rows, pa.Table) else rows())
            return
        (
            table.merge_insert("id")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .when_not_matched_by_source_delete(scope)
            .execute(rows if isinstance(rows, pa.Table) else rows())
        )

    def chunk_rows(self, tenant: str, columns: Sequence[str] | None = None) -> pl.DataFrame:
        if CHUNKS not in self.table_names():
            return pl.DataFrame()
        query = self.db.open_table(CHUNKS).search().where(f"tenant = {sql_str(tenant)}")
        if columns:
            query = query.select(list(columns))
        return pl.from_arrow(query.limit(None).to_arrow())

    @_retry_commit  # two runs creating the index at once conflict ("CreateIndex ... preempted")
    def ensure_fts_index(self) -> bool:
        """Create the full-text index on chunk text if missing; bring it up to date otherwise.

        Returns True when the index covers every row afterwards.
        """
        if CHUNKS not in self.table_names():
            return True
        table = self.db.open_table(CHUNKS)
        if table.count_rows() == 0:
            return True
        names = {idx.name for idx in table.list_indices()}
        if "text_idx" not in names:
            table.create_fts_index("text", use_tantivy=False, replace=True, with_position=False)
            if "tenant_idx" not in names:
                table.create_scalar_index("tenant", index_type="BITMAP", replace=True)
        elif self.unindexed_rows() > 0:
            table.optimize(cleanup_older_than=timedelta(days=7))
        self.maintain_cache_index()
        return self.unindexed_rows() == 0

    CACHE_INDEX_MIN_ROWS = 5_000
    CACHE_COMPACT_MIN_FRAGMENTS = 64

    @_retry_commit
    def maintain_cache_index(self) -> None:
        """Keep lookups by id in the embedding cache indexed once the cache is big enough.

        Maintenance is triggered by row counts: the index is built at CACHE_INDEX_MIN_ROWS rows
        and rebuilt when a fifth of the rows are not yet covered by it, so rebuilds over a growing
        cache cost a constant multiple of its final size. The embedding step calls this after
        every block it caches: without it, each lookup by id scans the whole cache, which made a
        first ingest quadratic in its chunk count. Rebuilding reads only the id column; the
        ``optimize()`` used before also compacted the cache every time, rewriting its vectors
        (on a 1M-chunk ingest the cache took 8.8 GB on disk for 1.5 GB live, and most of the
        embedding step's time and native memory). Compaction is left to ``compact_cache``.
        """
        if EMBEDDING_CACHE not in self.table_names():
            return
        table = self.cache()
        rows = table.count_rows()
        if rows < self.CACHE_INDEX_MIN_ROWS:
            return
        names = {idx.name for idx in table.list_indices()}
        if "id_idx" not in names or table.index_stats("id_idx").num_unindexed_rows > rows // 5:
            table.create_scalar_index("id", index_type="BTREE", replace=True)

    @_retry_commit
    def compact_cache(self, min_fragments: int | None = None) -> bool:
        """Compact the embedding cache once it holds many small fragments; True if it did.

        Every cached block is one small fragment; the embedding step calls this once at its end,
        so a large ingest is compacted once instead of after every few blocks. Versions older
        than 7 days are pruned as by the nightly ``optimize``; the files of newer ones stay (a
        concurrent reader may still use them) until a later optimize.
        """
        if EMBEDDING_CACHE not in self.table_names():
            return False
        table = self.cache()
        small = table.stats()["fragment_stats"]["num_small_fragments"]
        if small < (self.CACHE_COMPACT_MIN_FRAGMENTS if min_fragments is None else min_fragments):
            return False
        table.optimize(cleanup_older_than=timedelta(days=7))
        return True

    def unindexed_rows(self) -> int:
        table = self.db.open_table(CHUNKS)
        for idx in table.list_indices():
            if idx.name == "text_idx":
                return int(table.index_stats("text_idx").num_unindexed_rows)
        return table.count_rows()

    def optimize(self, cleanup_older_than: timedelta = timedelta(days=7)) -> dict[str, str]:
        """Compact files, update indices and prune old versions of every table."""
        done = {}
        for name in self.table_names():
            self.db.open_table(name).optimize(cleanup_older_than=cleanup_older_than)
            done[name] = "optimized"
        return done
