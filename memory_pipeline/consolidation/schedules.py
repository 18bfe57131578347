"""Maintenance of consolidation: delete expired episodes every 6 hours.

Episodes are short-term memory: each expires ``MEMORY_PIPELINE_EPISODE_TTL_DAYS`` (90) after it
was written, by then promoted into a dreaming file or not worth keeping. The vector lives in the
episode's row, so deleting the row deletes it. Compaction of the tables, this one included, is
the nightly ``lancedb_optimize_schedule``.
"""

from datetime import UTC, datetime

import dagster as dg

from memory_pipeline.config import get_settings
from memory_pipeline.consolidation.assets import CONSOLIDATION_WRITE_POOL
from memory_pipeline.consolidation.store import ConsolidationStore
from memory_pipeline.orchestration.cron import utc_schedule
from memory_pipeline.orchestration.resources import EmbedderResource, LanceDBResource


@dg.op(pool=CONSOLIDATION_WRITE_POOL)
def prune_expired_episodes(context: dg.OpExecutionContext, lancedb: LanceDBResource, embedder: EmbedderResource) -> dg.Output:
    """Deletes the episodes whose ``expires_at`` has passed, with their vectors."""
    deleted = ConsolidationStore(lancedb.uri, embedder.dim).delete_expired_episodes(datetime.now(UTC))
    context.log.info(f"deleted {deleted} expired episodes")
    return dg.Output(deleted, metadata={"episodes_deleted": deleted})


@dg.job(description="Delete expired episodes (TTL MEMORY_PIPELINE_EPISODE_TTL_DAYS, 90 days by default).")
def prune_episodes_job():
    prune_expired_episodes()


prune_episodes_schedule = utc_schedule(
    "prune_episodes_schedule", prune_episodes_job, get_settings().prune_cron,
    "Deletes expired episodes and their vectors (MEMORY_PIPELINE_PRUNE_CRON, every 6 hours by default).",
)
