"""The L0 index's tables: chunks, the file manifest and the embedding cache (domain verbs over
``store.base.LanceBase``).

Replacing a file's chunks is one ``merge_insert`` that also deletes the file's rows that are not
in the new version: LanceDB commits it as one version, so a reader sees the old chunks or the new
ones, never both and never neither. On a local folder, rows whose ids were checked absent under
the commit lock (new cache vectors, the first chunks of a file) are appended instead, which is as
safe and much cheaper on a large ingest.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import polars as pl
import pyarrow as pa

from memory_pipeline.store.base import KEEP_VERSIONS_FOR, LanceBase, retry_commit, sql_in, sql_str
from memory_pipeline.store.tables import CHUNKS, EMBEDDING_CACHE, FILES


class ChunkIndex(LanceBase):
    """The L0 chunk index of one LanceDB database: its chunks, file manifest and embedding cache."""

    def chunks(self):
        return self.open(CHUNKS)

    def files(self):
        return self.open(FILES)

    def cache(self):
        return self.open(EMBEDDING_CACHE)

    # -- manifest -------------------------------------------------------------------------
    def manifest(self, tenant: str) -> pl.DataFrame:
        """The manifest rows of one tenant (empty frame with the schema when none)."""
        self.files()
        return self.read(FILES, f"tenant = {sql_str(tenant)}")

    def holds_tenant(self, tenant: str) -> bool:
        """Whether the manifest lists a file of ``tenant`` (one whose folder is gone keeps its rows
        until a run removes them)."""
        return self.has(FILES) and self.files().count_rows(f"tenant = {sql_str(tenant)}") > 0

    def upsert_files(self, rows: pa.Table) -> None:
        self.upsert(FILES, rows)

    def delete_files(self, tenant: str, paths: Sequence[str]) -> None:
        if paths:
            self.delete(FILES, f"tenant = {sql_str(tenant)} AND {sql_in('path', paths)}")

    # -- embedding cache ------------------------------------------------------------------
    def cached_hashes(self, model: str, text_hashes: Sequence[str]) -> set[str]:
        """Which of these text hashes already have a vector from ``model`` (reads no vectors)."""
        if not text_hashes or not self.has(EMBEDDING_CACHE):
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
        if not text_hashes or not self.has(EMBEDDING_CACHE):
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

    @retry_commit
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
            schema=EMBEDDING_CACHE.schema(),
        )
        if local:
            self.cache().add(rows)
        else:
            self.upsert(EMBEDDING_CACHE, rows)
        return rows.num_rows

    # -- chunks ---------------------------------------------------------------------------
    @retry_commit
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
        return self.read(CHUNKS, f"tenant = {sql_str(tenant)}", columns)

    def ensure_fts_index(self) -> bool:
        """Create the full-text index on chunk text if missing; bring it up to date otherwise.

        Returns True when the index covers every row afterwards.
        """
        if not self.has(CHUNKS):
            return True
        covered = self.ensure_fts(CHUNKS)
        self.maintain_cache_index()
        return covered

    CACHE_INDEX_MIN_ROWS = 5_000
    CACHE_COMPACT_MIN_FRAGMENTS = 64

    @retry_commit
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
        if not self.has(EMBEDDING_CACHE):
            return
        table = self.cache()
        rows = table.count_rows()
        if rows < self.CACHE_INDEX_MIN_ROWS:
            return
        names = {idx.name for idx in table.list_indices()}
        if "id_idx" not in names or table.index_stats("id_idx").num_unindexed_rows > rows // 5:
            table.create_scalar_index("id", index_type="BTREE", replace=True)

    @retry_commit
    def compact_cache(self, min_fragments: int | None = None) -> bool:
        """Compact the embedding cache once it holds many small fragments; True if it did.

        Every cached block is one small fragment; the embedding step calls this once at its end,
        so a large ingest is compacted once instead of after every few blocks. Versions older
        than 7 days are pruned as by the nightly ``optimize``; the files of newer ones stay (a
        concurrent reader may still use them) until a later optimize.
        """
        if not self.has(EMBEDDING_CACHE):
            return False
        table = self.cache()
        small = table.stats()["fragment_stats"]["num_small_fragments"]
        if small < (self.CACHE_COMPACT_MIN_FRAGMENTS if min_fragments is None else min_fragments):
            return False
        table.optimize(cleanup_older_than=KEEP_VERSIONS_FOR)
        return True

    def unindexed_rows(self) -> int:
        return self.fts_unindexed(CHUNKS)
