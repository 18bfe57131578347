"""Concurrency pools (names are stable: their limits live in the instance).

Limits come from ``dagster.yaml`` (``concurrency.pools.default_limit``) or, per pool, from
``dagster instance concurrency set <pool> <limit>``; see docs/deploy.md.
"""

EMBEDDING_POOL = "embedding"
"""Steps that run the embedding model: CPU- and memory-bound, so few at once. The L0 step, which
also embeds, holds ``LANCEDB_WRITE_POOL`` instead: it writes the chunks table that compaction
rewrites, and a step holds one pool."""

LANCEDB_WRITE_POOL = "lancedb_write"
"""Steps that write or compact the L0 tables: concurrent writers to one table conflict."""
