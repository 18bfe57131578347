"""The ``facts`` recall source: typed memories (table ``memories``) searched beside notes,
transcripts and episodes by ``recall.search``.

A typed memory reads as one row cited ``facts/<id>``, the way an episode without a transcript
is cited ``episodes/<id>``. Only live memories are recalled: a forgotten memory is deleted from
the table, an updated one is replaced in place (same id, new content and vector), and a
scheduled plan that a later statement moved ("we pushed the cutover from 21 November to 28
November") is retired, as bulletins and scheduled queries retire it. ``memory_pipeline.app``
registers this source where the application is assembled; typed-memory recall passes it to
``recall.search`` directly.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import numpy as np
import pyarrow as pa

from memory_pipeline.recall.sources import RecallSource, Rows
from memory_pipeline.store.tables import MEMORIES

log = logging.getLogger(__name__)

RETIRED = datetime(1970, 1, 1, tzinfo=UTC)
"""The expiry of a superseded memory: retired from the moment the statement that moved it exists."""

_warned: set[str] = set()


class FactSource(RecallSource):
    """Typed memories (identity, preference, fact, event, decision, goal, ...) of the graph."""

    names = ("facts",)
    table = MEMORIES.name
    text_column = "content"  # the graph's full-text index (content_idx) covers this column
    columns = ("id", "memory_type", "content", "content_hash", "occurred_at", "happens_at", "created_at", "vector")

    def to_rows(self, tenant: str, arrow: pa.Table) -> Rows:
        if "vector" not in arrow.schema.names:
            if tenant not in _warned:
                _warned.add(tenant)
                log.warning(
                    "facts not searched for %s: the memories table has no vector column; run "
                    "`memory-pipeline graph ingest` with the index's embedder to rebuild it", tenant,
                )
            arrow = arrow.slice(0, 0)
        arrow = arrow.sort_by([("created_at", "ascending"), ("id", "ascending")])
        n = arrow.num_rows
        ids = arrow.column("id").to_pylist()
        said = [o or c for o, c in zip(arrow.column("occurred_at").to_pylist(), arrow.column("created_at").to_pylist())]
        gone = _superseded(tenant, arrow) if n else set()
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
            expires=[RETIRED if i in gone else None for i in ids],
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


def _superseded(tenant: str, arrow: pa.Table) -> set[str]:
    """Ids of scheduled memories a later statement moved (``graph.query.superseded_ids``)."""
    import polars as pl

    from memory_pipeline.config import get_settings
    from memory_pipeline.memories.query import superseded_ids, tenant_tz
    from memory_pipeline.tenancy import Tenant

    frame = pl.from_arrow(arrow.select(["id", "content", "occurred_at", "happens_at", "created_at"]))
    try:  # dates are compared in the user's timezone, named in its MEMORY.md
        tz = tenant_tz(get_settings().root, Tenant.from_key(tenant))
    except (ValueError, OSError):
        tz = ZoneInfo("UTC")
    return superseded_ids(frame, tz)


FACTS = FactSource()
