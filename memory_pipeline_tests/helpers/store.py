"""Chunk rows and cache writes for the store tests, written straight to LanceDB (light to import:
processes a test spawns import this module)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pyarrow as pa

from memory_pipeline.l0.store import ChunkIndex
from memory_pipeline.store.tables import CHUNKS

DIM = 8
HASHES = [f"h{i:04d}" for i in range(300)]


def vectors(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)


def put_all_hashes(uri: str, order: int) -> None:
    """Cache a vector for every hash of ``HASHES`` in blocks of 50, forwards or backwards by ``order``."""
    store = ChunkIndex(uri, dim=DIM)  # its own connection, as another process would have
    hashes = HASHES if order % 2 == 0 else HASHES[::-1]
    for start in range(0, len(hashes), 50):
        block = hashes[start : start + 50]
        store.put_cached_vectors("m", block, vectors(len(block)))


def rows(tenant: str, path: str, texts: list[str], prefix: str) -> pa.Table:
    rng = np.random.default_rng(len(texts))
    vectors = rng.normal(size=(len(texts), DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    now = datetime.now(UTC)
    data = [
        {
            "id": f"{prefix}{i}",
            "tenant": tenant,
            "agent_id": tenant.split("~")[0],
            "user_id": tenant.split("~")[1],
            "path": path,
            "source": "memory",
            "start_line": i + 1,
            "end_line": i + 1,
            "heading": None,
            "turn_ids": [],
            "text": text,
            "text_hash": f"h{prefix}{i}",
            "file_hash": prefix,
            "model": "m",
            "vector": vectors[i].tolist(),
            "file_date": None,
            "ts_start": None,
            "updated_at": now,
        }
        for i, text in enumerate(texts)
    ]
    return pa.Table.from_pylist(data, schema=CHUNKS.schema(DIM))
