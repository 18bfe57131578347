"""The ``facts`` recall source: typed memories (table ``memories``) searched beside notes,
transcripts and episodes by ``recall.search``.

A typed memory reads as one row cited ``facts/<id>``, the way an episode without a transcript
is cited ``episodes/<id>``; one read from a transcript turn carries that turn's id, as the
turn's own result does (``recall.timeline.cite_statements``). A forgotten memory is deleted from
the table and an updated one is replaced in place (same id, new content and vector). A memory a
later statement replaced stays searchable: recall ranks it below its successor and labels it
(``recall/timeline.py``), as it does transcripts and notes. The package declares this source as
an entry point (pyproject.toml), so every caller of recall finds it; typed-memory recall passes it
to ``recall.search`` directly.
"""

from __future__ import annotations

import logging

import numpy as np
import pyarrow as pa

from memory_pipeline.recall.sources import RecallSource, Rows
from memory_pipeline.store.tables import MEMORIES

log = logging.getLogger(__name__)

_warned: set[str] = set()


def said_at(occurred_at, created_at, source: str | None):
    """When a typed memory was said or written: when it happened, else when it was stored. One read
    from an undated note (a profile line) has no such time: it was extracted at ``created_at``,
    which says nothing of when the line was true."""
    if occurred_at is not None or source == "markdown":
        return occurred_at
    return created_at


class FactSource(RecallSource):
    """Typed memories (identity, preference, fact, event, decision, goal, ...) of the ``memories`` table."""

    names = ("facts",)
    table = MEMORIES.name
    text_column = "content"  # the table's full-text index (content_idx) covers this column
    columns = ("id", "memory_type", "content", "content_hash", "occurred_at", "happens_at", "created_at", "source",
               "source_ref", "vector")

    def to_rows(self, tenant: str, arrow: pa.Table) -> Rows:
        if "vector" not in arrow.schema.names:
            if tenant not in _warned:
                _warned.add(tenant)
                log.warning(
                    "facts not searched for %s: the memories table has no vector column; run "
                    "`memory-pipeline memories ingest` with the index's embedder to rebuild it", tenant,
                )
            arrow = arrow.slice(0, 0)
        arrow = arrow.sort_by([("created_at", "ascending"), ("id", "ascending")])
        n = arrow.num_rows
        ids = arrow.column("id").to_pylist()
        names = set(arrow.schema.names)
        kinds = arrow.column("source").to_pylist() if "source" in names else [None] * n
        refs = arrow.column("source_ref").to_pylist() if "source_ref" in names else [None] * n
        said = [
            said_at(o, c, k)
            for o, c, k in zip(arrow.column("occurred_at").to_pylist(), arrow.column("created_at").to_pylist(), kinds, strict=True)
        ]
        return Rows(
            tenant=tenant,
            ids=ids,
            source=np.array(["facts"] * n, dtype=object),
            path=[f"facts/{i}" for i in ids],
            start_line=np.ones(n, dtype=np.int64),
            end_line=np.ones(n, dtype=np.int64),
            turn_ids=[[] for _ in ids],
            text=arrow.column("content").to_pylist(),
            # The same fact held by the user and the agent-wide scope is one result (the user's);
            # the prefix keeps a fact from collapsing into a note line that reads the same.
            text_hash=[f"fact:{h}" for h in arrow.column("content_hash").to_pylist()],
            day=[None] * n,  # facts do not decay
            when=said,
            vectors=_vectors(arrow),
            cites=refs,
        )


def _vectors(arrow: pa.Table) -> np.ndarray:
    """One row per memory; a memory still waiting for its embedding is found by full text only."""
    if "vector" not in arrow.schema.names or arrow.num_rows == 0:
        return np.zeros((arrow.num_rows, 0), dtype=np.float32)
    column = arrow.column("vector").combine_chunks()
    dim = getattr(column.type, "list_size", None)
    if dim is None:  # a variable-size list column: the size of the first vector
        dim = next((len(v) for v in column.to_pylist() if v is not None), 0)
    vectors = np.zeros((len(column), dim), dtype=np.float32)
    present = np.asarray(column.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    if present.any():
        flat = column.filter(pa.array(present)).flatten().to_numpy(zero_copy_only=False)
        vectors[present] = np.asarray(flat, dtype=np.float32).reshape(-1, dim)
    return vectors


FACTS = FactSource()
