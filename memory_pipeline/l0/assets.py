"""The L0 index: ``memory_chunks -> memory_embeddings -> memory_index``, one partition per tenant.

A run may cover one tenant (the sensor) or many (a backfill runs as one run, so the model is
loaded once and texts of every tenant are embedded in shared batches).
"""


import time
from collections import Counter
from typing import Any

import dagster as dg

from memory_pipeline.l0.checks import ALL_CHECKS, check_tenant
from memory_pipeline.l0.pipeline import (
    TenantChunks,
    embed_tenants,
    prepare_tenant,
    write_tenant,
)
from memory_pipeline.l0.store import MemoryStore
from memory_pipeline.orchestration.partitions import tenant_partitions
from memory_pipeline.orchestration.pools import EMBEDDING_POOL, LANCEDB_WRITE_POOL
from memory_pipeline.orchestration.resources import EmbedderResource, LanceDBResource, WorkspaceResource
from memory_pipeline.sources.workspace import tenant_folder_skips
from memory_pipeline.tenancy import Tenant

GROUP = "l0_index"
PREVIEW_ROWS = 8


def by_partition(context: dg.AssetExecutionContext, value: Any) -> dict[str, Any]:
    """An IO-managed value as {partition key: value}, whether the run had one partition or many."""
    keys = context.partition_keys
    if len(keys) == 1 and not (isinstance(value, dict) and set(value) == set(keys)):
        return {keys[0]: value}
    return value


def for_output(context: dg.AssetExecutionContext, values: dict[str, Any]) -> Any:
    keys = context.partition_keys
    return values[keys[0]] if len(keys) == 1 else values


def _md_table(headers: list[str], rows: list[list[Any]]) -> str:
    def cell(v: Any) -> str:
        return str(v).replace("|", "\\|").replace("\n", " ")[:160]

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


@dg.asset(
    partitions_def=tenant_partitions,
    backfill_policy=dg.BackfillPolicy.single_run(),
    group_name=GROUP,
    kinds={"python", "polars"},
    # Lineage only: a dreamed file (_system/dreaming/*.md) is indexed like any memory file.
    deps=[dg.AssetDep("dreaming")],
)
def memory_chunks(
    context: dg.AssetExecutionContext, workspace: WorkspaceResource, lancedb: LanceDBResource, embedder: EmbedderResource
) -> dg.Output:
    """Chunks of every new or changed Markdown memory file and transcript, and the files to drop."""
    started = time.perf_counter()
    store = MemoryStore(lancedb.uri, dim=embedder.dim)
    settings = workspace.settings()
    results: dict[str, TenantChunks] = {}
    totals: Counter = Counter()
    skipped_rows: list[list[Any]] = []
    secrets: Counter = Counter()
    for key in context.partition_keys:
        tenant = Tenant.from_key(key)
        batch = prepare_tenant(store, workspace.root_path, tenant, settings, embedder.model_name)
        results[key] = batch
        totals.update(batch.stats)
        secrets.update(batch.secrets_redacted)
        skipped_rows += [[key, path, reason] for path, reason in batch.skipped]
        for path, reason in batch.skipped:
            context.log.warning(f"[{key}] skipped {path}: {reason}")
    # Folders that would be tenants but cannot be (an invalid id, a name holding a secret).
    folder_skips = tenant_folder_skips(workspace.root_path)
    skipped_rows += [["-", path, reason] for path, reason in folder_skips]
    for path, reason in folder_skips:
        context.log.warning(f"tenant folder skipped {path}: {reason}")
    preview_rows = []
    for batch in results.values():
        for row in batch.chunks.head(PREVIEW_ROWS - len(preview_rows)).iter_rows(named=True):
            preview_rows.append([row["path"], f"L{row['start_line']}-L{row['end_line']}", row["text"][:100]])
    metadata = {
        "tenants": len(results),
        "files_seen": totals["files_seen"],
        "files_new": totals["files_new"],
        "files_changed": totals["files_changed"],
        "files_unchanged": totals["files_unchanged"],
        "files_deleted": totals["files_deleted"],
        "files_skipped": totals["files_skipped"],
        "tenant_folders_skipped": len(folder_skips),
        "files_recorded_only": totals["files_recorded_only"],
        "malformed_lines": totals["malformed_lines"],
        "chunks_prepared": totals["chunks_prepared"],
        "secrets_redacted": sum(secrets.values()),
        "secrets_redacted_by_type": dg.MetadataValue.json(dict(secrets)),
        "seconds": round(time.perf_counter() - started, 3),
        "skipped": dg.MetadataValue.md(_md_table(["tenant", "path", "reason"], skipped_rows[:50]) if skipped_rows else "nothing skipped"),
        "preview": dg.MetadataValue.md(_md_table(["path", "lines", "text"], preview_rows) if preview_rows else "no changed files"),
    }
    return dg.Output(for_output(context, results), metadata=metadata)


@dg.asset(
    partitions_def=tenant_partitions,
    backfill_policy=dg.BackfillPolicy.single_run(),
    group_name=GROUP,
    kinds={"python", "pytorch"},
    pool=EMBEDDING_POOL,
)
def memory_embeddings(
    context: dg.AssetExecutionContext, memory_chunks: Any, lancedb: LanceDBResource, embedder: EmbedderResource
) -> dg.Output:
    """A cached unit vector for every new chunk text; texts seen before are not embedded again."""
    started = time.perf_counter()
    batches = list(by_partition(context, memory_chunks).values())
    model = embedder.get() if any(b.chunks.height for b in batches) else _NoModel(embedder)
    report = embed_tenants(batches, model, MemoryStore(lancedb.uri, dim=embedder.dim))
    metadata = {
        "model": embedder.model_name,
        "chunks": sum(b.chunks.height for b in batches),
        "distinct_texts": report.distinct_texts,
        "embeddings_computed": report.computed,
        "cache_hits": report.cache_hits,
        "embed_seconds": round(report.embed_s, 3),
        "cache_seconds": round(report.cache_s, 3),
        "seconds": round(time.perf_counter() - started, 3),
    }
    return dg.Output(for_output(context, {b.tenant: report for b in batches}), metadata=metadata)


class _NoModel:
    """Stands in for the embedder when there is nothing to embed, so no model is loaded."""

    def __init__(self, resource: EmbedderResource):
        self.name, self.dim = resource.model_name, resource.dim

    def embed(self, texts):  # pragma: no cover - never called with texts
        raise AssertionError("nothing to embed")


@dg.asset(
    partitions_def=tenant_partitions,
    backfill_policy=dg.BackfillPolicy.single_run(),
    group_name=GROUP,
    kinds={"lancedb"},
    pool=LANCEDB_WRITE_POOL,
    check_specs=[dg.AssetCheckSpec(name, asset="memory_index") for name in ALL_CHECKS],
)
def memory_index(
    context: dg.AssetExecutionContext,
    memory_chunks: Any,
    memory_embeddings: Any,
    lancedb: LanceDBResource,
    embedder: EmbedderResource,
) -> dg.MaterializeResult:
    """The tenant's searchable chunks in LanceDB (vector + full-text), matching its files exactly."""
    started = time.perf_counter()
    store = MemoryStore(lancedb.uri, dim=embedder.dim)
    written = Counter()
    per_tenant: dict[str, TenantChunks] = by_partition(context, memory_chunks)
    del memory_embeddings  # its vectors are read from the cache; the input orders the steps
    for key, prepared in per_tenant.items():
        written.update(write_tenant(store, prepared, embedder.model_name))
    fts_started = time.perf_counter()
    fts_complete = store.ensure_fts_index()
    fts_s = time.perf_counter() - fts_started

    outcomes: dict[str, list] = {}
    for key in per_tenant:
        for outcome in check_tenant(store, key, embedder.dim):
            outcomes.setdefault(outcome.name, []).append((key, outcome))
    check_results = [
        dg.AssetCheckResult(
            check_name=name,
            passed=all(o.passed for _, o in items),
            metadata={"failed_tenants": [k for k, o in items if not o.passed], "details": dg.MetadataValue.json({k: o.details for k, o in items[:20]})},
        )
        for name, items in outcomes.items()
    ]
    table = store.chunks()
    return dg.MaterializeResult(
        metadata={
            "chunks_written": written["chunks_written"],
            "chunks_replaced_or_removed": written["chunks_replaced_or_removed"],
            "fts_covers_every_row": fts_complete,
            "fts_seconds": round(fts_s, 3),
            "table_rows": table.count_rows(),
            "table_version": table.version,
            "seconds": round(time.perf_counter() - started, 3),
        },
        check_results=check_results,
    )


l0_assets = [memory_chunks, memory_embeddings, memory_index]
l0_index_job = dg.define_asset_job(
    "l0_index_job", l0_assets, partitions_def=tenant_partitions,
    description="Chunk, embed and index the changed memory files of the requested tenants.",
)
