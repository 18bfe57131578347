"""Data check of the typed memories of one tenant: a plain function returning (passed, metadata)."""

from __future__ import annotations

from typing import Any

import numpy as np

from memory_pipeline.memories.store import MEMORY_TYPES, TypedMemoryStore

MEMORIES_CHECK = "memories_typed_and_embedded"
DESCRIPTION = (
    "Every typed memory of the tenant has a known type, one id, non-empty content and one finite "
    "vector of the model's dimension, so search and bulletins can read every row."
)


def check_memories(store: TypedMemoryStore, tenant: str) -> tuple[bool, dict[str, Any]]:
    rows = store.memory_rows(tenant, vectors=True)
    if rows.height == 0:
        return True, {"memories": 0}
    unknown = sorted(set(rows["memory_type"].to_list()) - set(MEMORY_TYPES))
    duplicated = rows.height - rows["id"].n_unique()
    empty = rows.filter(rows["content"].str.strip_chars() == "")["id"].to_list()
    bad_vectors = []
    for mid, vector in zip(rows["id"].to_list(), rows["vector"].to_list(), strict=True):
        if vector is None or len(vector) != store.dim or not np.isfinite(np.asarray(vector, dtype=np.float32)).all():
            bad_vectors.append(mid)
    passed = not (unknown or duplicated or empty or bad_vectors)
    return passed, {
        "memories": rows.height, "unknown_types": unknown, "duplicate_ids": duplicated,
        "empty_content": empty[:20], "without_a_good_vector": bad_vectors[:20],
    }
