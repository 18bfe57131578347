"""Chunk rows for the store tests, written straight to LanceDB."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pyarrow as pa

from memory_pipeline.store.tables import CHUNKS

DIM = 8


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
