"""Data checks on the L0 index of one tenant: plain functions returning (passed, details)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from memory_pipeline.l0.store import MemoryStore
from memory_pipeline.store.tables import CHUNKS

CHECK_ONE_VECTOR = "one_vector_per_chunk"
CHECK_NO_ORPHANS = "no_orphan_rows"
CHECK_UNIQUE_IDS = "unique_chunk_ids"
CHECK_MANIFEST = "manifest_matches_chunks"
ALL_CHECKS = (CHECK_ONE_VECTOR, CHECK_NO_ORPHANS, CHECK_UNIQUE_IDS, CHECK_MANIFEST)


@dataclass(frozen=True)
class CheckOutcome:
    name: str
    passed: bool
    details: dict


def _load(store: MemoryStore, tenant: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    manifest = store.manifest(tenant)
    if not store.has(CHUNKS):
        return pl.DataFrame(), manifest
    chunks = store.chunk_rows(tenant, ["id", "path", "file_hash", "vector", "model"])
    return chunks, manifest


def check_tenant(store: MemoryStore, tenant: str, dim: int) -> list[CheckOutcome]:
    chunks, manifest = _load(store, tenant)
    n = chunks.height
    out = []

    bad_vectors = 0
    if n:
        vectors = chunks["vector"]
        nulls = vectors.null_count()
        matrix = np.asarray(vectors.drop_nulls().to_list(), dtype=np.float32).reshape(-1, dim) if n - nulls else np.zeros((0, dim))
        bad_vectors = nulls + int((~np.isfinite(matrix).all(axis=1)).sum())
        bad_vectors += int((np.abs(np.linalg.norm(matrix, axis=1) - 1.0) > 1e-3).sum())
    out.append(CheckOutcome(CHECK_ONE_VECTOR, bad_vectors == 0, {"chunks": n, "bad_vectors": bad_vectors, "dim": dim}))

    dupes = n - chunks["id"].n_unique() if n else 0
    out.append(CheckOutcome(CHECK_UNIQUE_IDS, dupes == 0, {"duplicate_ids": dupes}))

    indexed = manifest.filter(pl.col("status") == "indexed") if manifest.height else manifest
    indexed_paths = set(indexed["path"].to_list()) if indexed.height else set()
    chunk_paths = set(chunks["path"].to_list()) if n else set()
    orphans = sorted(chunk_paths - indexed_paths)
    out.append(CheckOutcome(CHECK_NO_ORPHANS, not orphans, {"orphan_paths": orphans[:20], "orphan_count": len(orphans)}))

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
    out.append(CheckOutcome(CHECK_MANIFEST, not mismatched, {"mismatched_paths": sorted(mismatched)[:20], "mismatched_count": len(mismatched)}))
    return out
