"""Data checks on the L0 index of one tenant: plain functions returning (passed, details).

A failed check names the files whose rows are wrong; ``repair_tenant`` drops those files' chunks
and manifest rows, so the next run finds them new and indexes them again instead of skipping
them as unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa

from memory_pipeline.l0.store import ChunkIndex
from memory_pipeline.store.tables import CHUNKS

CHECK_ONE_VECTOR = "one_vector_per_chunk"
CHECK_NO_ORPHANS = "no_orphan_rows"
CHECK_UNIQUE_IDS = "unique_chunk_ids"
CHECK_MANIFEST = "manifest_matches_chunks"
ALL_CHECKS = (CHECK_ONE_VECTOR, CHECK_NO_ORPHANS, CHECK_UNIQUE_IDS, CHECK_MANIFEST)
DESCRIPTIONS = {
    CHECK_ONE_VECTOR: "Every chunk of the tenant has one finite unit vector of the model's dimension.",
    CHECK_NO_ORPHANS: "Every chunk belongs to a file the manifest lists as indexed.",
    CHECK_UNIQUE_IDS: "No two chunks of the tenant share an id.",
    CHECK_MANIFEST: "Every indexed file has exactly the chunk count and content hash the manifest records.",
}
"""Each fails the run (blocking) and makes the next run re-index the files it names."""


@dataclass(frozen=True)
class CheckOutcome:
    name: str
    passed: bool
    details: dict
    repair_paths: tuple[str, ...] = ()  # every file whose rows are wrong, not only the first 20


def _load(store: ChunkIndex, tenant: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    manifest = store.manifest(tenant)
    if not store.has(CHUNKS):
        return pl.DataFrame(), manifest
    chunks = store.chunk_rows(tenant, ["id", "path", "file_hash", "vector", "model"])
    return chunks, manifest


def check_tenant(store: ChunkIndex, tenant: str, dim: int) -> list[CheckOutcome]:
    chunks, manifest = _load(store, tenant)
    n = chunks.height
    out = []

    bad_paths: list[str] = []
    if n:
        good = np.zeros(n, dtype=bool)
        present = chunks["vector"].is_not_null().to_numpy()
        if present.any():
            matrix = np.asarray(chunks["vector"].filter(chunks["vector"].is_not_null()).to_list(), dtype=np.float32).reshape(-1, dim)
            good[present] = np.isfinite(matrix).all(axis=1) & (np.abs(np.linalg.norm(matrix, axis=1) - 1.0) <= 1e-3)
        bad_paths = chunks.filter(pl.Series(~good))["path"].to_list()
    out.append(CheckOutcome(
        CHECK_ONE_VECTOR, not bad_paths, {"chunks": n, "bad_vectors": len(bad_paths), "dim": dim}, tuple(sorted(set(bad_paths)))
    ))

    duplicated = chunks.filter(pl.col("id").is_duplicated())["path"].to_list() if n else []
    out.append(CheckOutcome(
        CHECK_UNIQUE_IDS, not duplicated, {"duplicate_ids": n - chunks["id"].n_unique() if n else 0}, tuple(sorted(set(duplicated)))
    ))

    indexed = manifest.filter(pl.col("status") == "indexed") if manifest.height else manifest
    indexed_paths = set(indexed["path"].to_list()) if indexed.height else set()
    chunk_paths = set(chunks["path"].to_list()) if n else set()
    orphans = sorted(chunk_paths - indexed_paths)
    out.append(CheckOutcome(CHECK_NO_ORPHANS, not orphans, {"orphan_paths": orphans[:20], "orphan_count": len(orphans)}, tuple(orphans)))

    mismatched: list[str] = []
    if indexed.height:
        expected = {r["path"]: (r["content_hash"], r["chunk_count"]) for r in indexed.iter_rows(named=True)}
        got: dict[str, tuple[set, int]] = {}
        if n:
            for path, group in chunks.group_by("path"):
                got[path[0]] = (set(group["file_hash"].to_list()), group.height)
        for path, (h, count) in expected.items():
            hashes, have = got.get(path, (set(), 0))
            if have != count or (count and hashes != {h}):
                mismatched.append(path)
    out.append(CheckOutcome(
        CHECK_MANIFEST, not mismatched, {"mismatched_paths": sorted(mismatched)[:20], "mismatched_count": len(mismatched)},
        tuple(sorted(mismatched)),
    ))
    return out


def repair_tenant(store: ChunkIndex, tenant: str, outcomes: list[CheckOutcome]) -> list[str]:
    """Drop the chunks and manifest rows of every file a failed check named; returns those paths.

    The next run sees the files that still exist as new and indexes them again (the embedding
    cache makes that cheap); chunks of files that no longer exist are gone with them.
    """
    paths = sorted({p for o in outcomes if not o.passed for p in o.repair_paths})
    if paths:
        store.replace_file_chunks(tenant, paths, pa.table({}), empty=True)
        store.delete_files(tenant, paths)
    return paths
