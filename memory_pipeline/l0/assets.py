"""The L0 index: ``memory_chunks -> memory_embeddings -> memory_index``, one partition per tenant.

A run may cover one tenant (the sensor) or many (a backfill runs as one run, so the model is
loaded once and texts of every tenant are embedded in shared batches). Each tenant's partition
gets its own figures (``report_partitions``). A tenant whose files cannot be prepared is left out
of the later steps (its value is None) while the others are indexed, and the run then fails
naming it. The index checks run per tenant after the write; a failed one makes the next run
re-index the files it names.
"""


import time
from collections import Counter
from typing import Any

import dagster as dg
import pyarrow as pa

from memory_pipeline.config import get_settings
from memory_pipeline.embedding import EMBEDDER_IDENTITY
from memory_pipeline.l0.checks import ALL_CHECKS, DESCRIPTIONS, check_tenant, repair_tenant
from memory_pipeline.l0.pipeline import (
    CHUNK_COLUMNS,
    TenantChunks,
    embed_tenants,
    prepare_tenant,
    write_tenant,
)
from memory_pipeline.l0.store import ChunkIndex
from memory_pipeline.orchestration.materializations import (
    PartitionReport,
    checks_only,
    column_schema,
    layer_asset,
    md_table,
    report_checks,
    report_partitions,
)
from memory_pipeline.orchestration.partitions import LINEAGE_ONLY, tenant_partitions
from memory_pipeline.orchestration.pools import EMBEDDING_POOL, LANCEDB_WRITE_POOL
from memory_pipeline.orchestration.resources import EmbedderResource, LanceDBResource, WorkspaceResource
from memory_pipeline.orchestration.sources import markdown_memory, session_transcripts
from memory_pipeline.orchestration.tenant_keys import require_known_tenants
from memory_pipeline.store.base import sql_str
from memory_pipeline.store.tables import CHUNKS
from memory_pipeline.sources.workspace import tenant_folder_skips
from memory_pipeline.tenancy import Tenant

GROUP = "l0_index"
PREVIEW_ROWS = 8
TAGS = {"layer": "l0"}
l0_asset = layer_asset(GROUP, TAGS)
_DIM = EMBEDDER_IDENTITY[get_settings().embedder][1]


def _prepared_schema():
    """The chunk rows ``memory_chunks`` hands on: the chunks table's columns filled before embedding
    and writing (no model, vector or write time)."""
    return pa.schema([f for f in CHUNKS.schema(_DIM) if f.name in CHUNK_COLUMNS])


def by_partition(context: dg.AssetExecutionContext, value: Any) -> dict[str, Any]:
    """An IO-managed value as {partition key: value}, whether the run had one partition or many."""
    keys = context.partition_keys
    if len(keys) == 1 and not (isinstance(value, dict) and set(value) == set(keys)):
        return {keys[0]: value}
    return value


def for_output(context: dg.AssetExecutionContext, values: dict[str, Any]) -> Any:
    keys = context.partition_keys
    return values[keys[0]] if len(keys) == 1 else values


@l0_asset(
    partitions_def=tenant_partitions,
    kinds={"python", "polars"},
    metadata={"dagster/column_schema": column_schema(CHUNKS.name, _prepared_schema())},
    # The sources it reads; a dreamed file (_system/dreaming/*.md) and a flushed note (memory/*.md)
    # are indexed like any memory file. Those three are partitioned by session tenant: lineage only.
    deps=[
        markdown_memory.key,
        *(dg.AssetDep(key, partition_mapping=LINEAGE_ONLY) for key in (session_transcripts.key, "dreaming", "compaction_flush")),
    ],
)
def memory_chunks(
    context: dg.AssetExecutionContext, workspace: WorkspaceResource, lancedb: LanceDBResource, embedder: EmbedderResource
):
    """Chunks of every new or changed Markdown memory file and transcript, and the files to drop."""
    started = time.perf_counter()
    store = ChunkIndex(lancedb.uri, dim=embedder.dim)
    settings = workspace.settings()
    results: dict[str, TenantChunks | None] = {}
    report = PartitionReport(context.partition_keys)
    # A key added by hand that names no tenant fails the run before any work: nothing is
    # materialized for it. A tenant whose folder is gone runs while its rows remain: it removes them.
    require_known_tenants(workspace.root_path, report.partition_keys, settings.teams, store.holds_tenant)
    context.log.info(f"preparing {len(report.partition_keys)} tenant(s): {', '.join(report.partition_keys[:10])}")
    failed: dict[str, str] = {}
    skipped_rows: list[list[Any]] = []
    secrets: Counter = Counter()
    for key in report.partition_keys:
        try:
            batch = prepare_tenant(store, workspace.root_path, Tenant.from_key(key), settings, embedder.model_name)
        except Exception as exc:  # one tenant's failure must not stop the others
            if len(report.partition_keys) == 1:
                raise
            context.log.error(f"[{key}] not indexed: {type(exc).__name__}: {exc}")
            failed[key], results[key] = f"{type(exc).__name__}: {exc}", None
            continue
        results[key] = batch
        context.log.info(
            f"[{key}] files: {batch.stats['files_new']} new, {batch.stats['files_changed']} changed, "
            f"{batch.stats['files_deleted']} deleted, {batch.stats['files_unchanged']} unchanged; "
            f"{batch.chunks.height} chunks to embed"
        )
        secrets.update(batch.secrets_redacted)
        skipped_rows += [[key, path, reason] for path, reason in batch.skipped]
        for path, reason in batch.skipped:
            context.log.warning(f"[{key}] skipped {path}: {reason}")
        report.add(key, {
            **{name: batch.stats[name] for name in FILE_FIGURES},
            "chunks_prepared": batch.chunks.height,
            "secrets_redacted": sum(batch.secrets_redacted.values()),
        })
    # Folders that would be tenants but cannot be (an invalid id, a name holding a secret).
    folder_skips = tenant_folder_skips(workspace.root_path)
    skipped_rows = [["-", path, reason] for path, reason in folder_skips] + skipped_rows  # first: the table shows 50
    for path, reason in folder_skips:
        context.log.warning(f"tenant folder skipped {path}: {reason}")
    preview_rows = []
    for batch in results.values():
        if batch is None:
            continue
        for row in batch.chunks.head(PREVIEW_ROWS - len(preview_rows)).iter_rows(named=True):
            preview_rows.append([row["path"], f"L{row['start_line']}-L{row['end_line']}", row["text"][:100]])
    metadata = {
        "tenant_folders_skipped": len(folder_skips),
        "seconds": round(time.perf_counter() - started, 3),
        "secrets_redacted_by_type": dg.MetadataValue.json(dict(secrets)),
        "failed_tenants": dg.MetadataValue.json(failed),
        "skipped": dg.MetadataValue.md(md_table(["tenant", "path", "reason"], skipped_rows[:50], "nothing skipped")),
        "preview": dg.MetadataValue.md(md_table(["path", "lines", "text"], preview_rows, "no changed files")),
    }
    # Failed tenants travel as None: the next steps index the others, memory_index fails the run.
    yield from report_partitions(context, report, metadata, output=for_output(context, results))


FILE_FIGURES = (
    "files_seen", "files_new", "files_changed", "files_unchanged", "files_deleted", "files_skipped",
    "files_recorded_only", "malformed_lines",
)


@l0_asset(
    partitions_def=tenant_partitions,
    kinds={"python", "pytorch"},
    pool=EMBEDDING_POOL,
)
def memory_embeddings(
    context: dg.AssetExecutionContext, memory_chunks: Any, lancedb: LanceDBResource, embedder: EmbedderResource
):
    """A cached unit vector for every new chunk text; texts seen before are not embedded again."""
    started = time.perf_counter()
    prepared = by_partition(context, memory_chunks)
    batches = [b for b in prepared.values() if b is not None]
    model = embedder.get() if any(b.chunks.height for b in batches) else _NoModel(embedder)
    embedded = embed_tenants(batches, model, ChunkIndex(lancedb.uri, dim=embedder.dim))
    context.log.info(
        f"embedded {embedded.computed} new texts in {embedded.embed_s:.1f}s; {embedded.cache_hits} from the cache"
    )
    report = PartitionReport(context.partition_keys)
    for b in batches:
        report.add(b.tenant, {"chunks": b.chunks.height, "distinct_texts": b.chunks["text_hash"].n_unique() if b.chunks.height else 0})
    metadata = {
        "model": embedder.model_name,
        "embeddings_computed": embedded.computed,
        "cache_hits": embedded.cache_hits,
        "embed_seconds": round(embedded.embed_s, 3),
        "cache_seconds": round(embedded.cache_s, 3),
        "seconds": round(time.perf_counter() - started, 3),
    }
    output = for_output(context, {key: (embedded if b is not None else None) for key, b in prepared.items()})
    yield from report_partitions(context, report, metadata, output=output)


class _NoModel:
    """Stands in for the embedder when there is nothing to embed, so no model is loaded."""

    def __init__(self, resource: EmbedderResource):
        self.name, self.dim = resource.model_name, resource.dim

    def embed(self, texts):  # pragma: no cover - never called with texts
        raise AssertionError("nothing to embed")


@l0_asset(
    partitions_def=tenant_partitions,
    kinds={"lancedb"},
    pool=LANCEDB_WRITE_POOL,
    metadata={"dagster/column_schema": column_schema(CHUNKS.name, CHUNKS.schema(_DIM))},
    deps=[memory_chunks, memory_embeddings],
    check_specs=[
        dg.AssetCheckSpec(name, asset="memory_index", description=DESCRIPTIONS[name], blocking=True, partitions_def=tenant_partitions)
        for name in ALL_CHECKS
    ],
)
def memory_index(
    context: dg.AssetExecutionContext,
    memory_chunks: Any,
    memory_embeddings: Any,
    lancedb: LanceDBResource,
    embedder: EmbedderResource,
):
    """The tenant's searchable chunks in LanceDB (vector + full-text), matching its files exactly."""
    started = time.perf_counter()
    store = ChunkIndex(lancedb.uri, dim=embedder.dim)
    if checks_only(context):  # the tenants' rows as they are now; nothing is re-indexed
        outcomes = {key: check_tenant(store, key, embedder.dim) for key in context.partition_keys}
        yield from report_checks(context, {
            name: {key: next((o.passed, o.details) for o in found if o.name == name) for key, found in outcomes.items()}
            for name in ALL_CHECKS})
        return
    prepared: dict[str, TenantChunks | None] = by_partition(context, memory_chunks)
    del memory_embeddings  # its vectors are read from the cache; the input orders the steps
    written = {key: write_tenant(store, batch, embedder.model_name) for key, batch in prepared.items() if batch is not None}
    fts_started = time.perf_counter()
    fts_complete = store.ensure_fts_index()
    fts_s = time.perf_counter() - fts_started

    report = PartitionReport(context.partition_keys)
    table = store.chunks()
    for key, figures in written.items():
        outcomes = check_tenant(store, key, embedder.dim)
        repaired = repair_tenant(store, key, outcomes)
        context.log.info(
            f"[{key}] {figures['chunks_written']} chunks written, {figures['chunks_replaced_or_removed']} replaced or "
            f"removed; checks passed: {sum(o.passed for o in outcomes)} of {len(outcomes)}"
        )
        if repaired:
            context.log.error(f"[{key}] index checks failed; the next run re-indexes {len(repaired)} file(s): {repaired[:10]}")
        report.add(
            key,
            {
                **figures,
                "dagster/row_count": table.count_rows(f"tenant = {sql_str(key)}"),
                "files_to_reindex": len(repaired),
            },
            {o.name: (o.passed, {**o.details, "files_to_reindex": list(o.repair_paths[:20])}) for o in outcomes},
        )
    for key, batch in prepared.items():
        if batch is None:
            report.fail(key, "its files could not be prepared (see memory_chunks)")
    metadata = {
        "fts_covers_every_row": fts_complete,
        "fts_seconds": round(fts_s, 3),
        "table_rows": table.count_rows(),
        "table_version": table.version,
        "seconds": round(time.perf_counter() - started, 3),
    }
    yield from report_partitions(context, report, metadata)


l0_assets = [memory_chunks, memory_embeddings, memory_index]
l0_index_job = dg.define_asset_job(
    "l0_index_job", l0_assets, partitions_def=tenant_partitions,
    description="Chunk, embed and index the changed memory files of the requested tenants.",
)
