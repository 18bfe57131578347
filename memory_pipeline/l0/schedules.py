"""Maintenance of the L0 tables: compact and optimize LanceDB on a schedule (nightly by default).

Merge-inserts leave many small fragments and old versions behind, and a full-text index does not
cover rows added after it was built until the table is optimized. One run compacts every table,
brings its indices up to date and drops versions older than a week, then writes recall's
persisted indices of every large tenant whose copy is missing or stale (``recall/index/files.py``),
so the next process's first query reads them instead of building them. The cron comes from
``MEMORY_PIPELINE_OPTIMIZE_CRON`` (UTC), so a test can run it every minute.
"""

import time

import dagster as dg

from memory_pipeline.config import get_settings
from memory_pipeline.l0.store import ChunkIndex
from memory_pipeline.orchestration.cron import utc_schedule
from memory_pipeline.orchestration.materializations import md_table
from memory_pipeline.orchestration.pools import LANCEDB_WRITE_POOL
from memory_pipeline.orchestration.resources import LanceDBResource
from memory_pipeline.store.base import KEEP_VERSIONS_FOR



def table_stats(store) -> dict[str, dict[str, int]]:
    """Rows and version of every table, to show what an optimization changed."""
    stats = {}
    for name in store.table_names():
        table = store.db.open_table(name)
        stats[name] = {"rows": table.count_rows(), "version": table.version}
    return stats


@dg.op(pool=LANCEDB_WRITE_POOL, out=dg.Out(dg.Nothing))
def optimize_lancedb_tables(context: dg.OpExecutionContext, lancedb: LanceDBResource) -> dg.Output:
    """Compacts every LanceDB table, updates its indices and prunes versions older than a week."""
    started = time.perf_counter()
    store = ChunkIndex(lancedb.uri)
    before = table_stats(store)
    done = store.optimize(cleanup_older_than=KEEP_VERSIONS_FOR)
    after = table_stats(store)
    fts_complete = store.ensure_fts_index()
    context.log.info(f"optimized {len(done)} tables in {time.perf_counter() - started:.2f}s")
    rows = [[name, after[name]["rows"], before.get(name, {}).get("version", "-"), after[name]["version"]] for name in sorted(after)]
    return dg.Output(
        None,  # the tables are the result; nothing for an IO manager to store
        metadata={
            "tables": dg.MetadataValue.json(done),
            "fts_covers_every_row": fts_complete,
            "seconds": round(time.perf_counter() - started, 3),
            "tables_after": dg.MetadataValue.md(
                md_table(["table", "rows", "version before", "version after"], rows, "no tables yet")
            ),
        },
    )


class RecallIndexConfig(dg.Config):
    min_rows: int = 10_000  # smaller tenants are read and indexed by recall in under a second


@dg.op(ins={"optimized": dg.In(dg.Nothing)}, out=dg.Out(dg.Nothing))
def persist_recall_indexes(context: dg.OpExecutionContext, config: RecallIndexConfig, lancedb: LanceDBResource) -> dg.Output:
    """Writes recall's indices of every tenant of ``min_rows`` chunks or more (nothing when current)."""
    from memory_pipeline.recall.index.persist import persist_large_tenants  # recall is read-side: imported when run

    started = time.perf_counter()
    recall = get_settings().recall
    done = persist_large_tenants(lancedb.uri, recall.ann_min_rows, recall.ann_lists, min_rows=config.min_rows)
    context.log.info(f"recall indices current for {len(done)} tenants in {time.perf_counter() - started:.2f}s")
    return dg.Output(None, metadata={
        "tenants": len(done), "dagster/row_count": sum(done.values()),
        "seconds": round(time.perf_counter() - started, 3),
    })


@dg.job(description="Compact and optimize every LanceDB table of the L0 index; persist recall's indices.")
def lancedb_optimize_job():
    persist_recall_indexes(optimize_lancedb_tables())


lancedb_optimize_schedule = utc_schedule(
    "lancedb_optimize_schedule", lancedb_optimize_job, get_settings().optimize_cron,
    "Compacts and optimizes the LanceDB tables (MEMORY_PIPELINE_OPTIMIZE_CRON, nightly by default).",
)
