"""The L0 index: ``memory_chunks -> memory_embeddings -> memory_index``, one partition per tenant.

The three assets are materialized by one step (``l0_index``): texts are chunked, embedded and
written in memory, with no stored value between them. A run may cover one tenant (the sensor) or
many (a backfill runs as one run, so the model is loaded once and texts of every tenant are
embedded in shared batches). Each tenant's partition gets its own figures on each asset. A tenant
whose files cannot be prepared is left out while the others are indexed; the step then fails
naming it, so none of the three assets shows it materialized (a value handed between steps would
be recorded by Dagster as a materialization of every partition of the run). The index checks run
per tenant after the write; a failed one makes the next run re-index the files it names.
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
    partition_events,
    raise_failed,
    report_checks,
)
from memory_pipeline.orchestration.partitions import LINEAGE_ONLY, tenant_partitions
from memory_pipeline.orchestration.pools import LANCEDB_WRITE_POOL
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


SPECS = [
    dg.AssetSpec(
        "memory_chunks",
        description="Chunks of every new or changed Markdown memory file and transcript, and the files to drop.",
        kinds={"python", "polars"},
        metadata={"dagster/column_schema": column_schema(CHUNKS.name, _prepared_schema())},
        # The sources it reads; a dreamed file (_system/dreaming/*.md) and a flushed note (memory/*.md)
        # are indexed like any memory file. Those three are partitioned by session tenant: lineage only.
        deps=[
            markdown_memory.key,
            *(dg.AssetDep(key, partition_mapping=LINEAGE_ONLY) for key in (session_transcripts.key, "dreaming", "compaction_flush")),
        ],
    ),
    dg.AssetSpec(
        "memory_embeddings",
        description="A cached unit vector for every new chunk text; texts seen before are not embedded again.",
        kinds={"python", "onnx"},
        deps=["memory_chunks"],
    ),
    dg.AssetSpec(
        "memory_index",
        description="The tenant's searchable chunks in LanceDB (vector + full-text), matching its files exactly.",
        kinds={"lancedb"},
        metadata={"dagster/column_schema": column_schema(CHUNKS.name, CHUNKS.schema(_DIM))},
        deps=["memory_chunks", "memory_embeddings"],
    ),
]
CHUNKS_KEY, EMBEDDINGS_KEY, INDEX_KEY = (spec.key for spec in SPECS)


@l0_asset(
    specs=SPECS,
    partitions_def=tenant_partitions,
    # It writes the chunks table, which compaction also rewrites; the model runs inside it.
    pool=LANCEDB_WRITE_POOL,
    check_specs=[
        dg.AssetCheckSpec(name, asset="memory_index", description=DESCRIPTIONS[name], blocking=True, partitions_def=tenant_partitions)
        for name in ALL_CHECKS
    ],
)
def l0_index(context: dg.AssetExecutionContext, workspace: WorkspaceResource, lancedb: LanceDBResource, embedder: EmbedderResource):
    """Chunks, embeds and indexes the changed memory files of the run's tenants in one step, so a
    tenant that fails is materialized by none of the three assets while the others are."""
    store = ChunkIndex(lancedb.uri, dim=embedder.dim)
    if checks_only(context):  # the tenants' rows as they are now; nothing is re-indexed
        outcomes = {key: check_tenant(store, key, embedder.dim) for key in context.partition_keys}
        yield from report_checks(context, {
            name: {key: next((o.passed, o.details) for o in found if o.name == name) for key, found in outcomes.items()}
            for name in ALL_CHECKS})
        return
    keys = list(context.partition_keys)
    if context.selected_asset_keys != {CHUNKS_KEY, EMBEDDINGS_KEY, INDEX_KEY}:
        context.log.info("memory_chunks, memory_embeddings and memory_index are one step: all three run, the selected are reported")
    failed: dict[str, str] = {}
    batches, chunks_report, chunks_meta = _prepare(context, keys, failed, store, workspace, embedder)
    embed_report, embed_meta = _embed(context, keys, failed, batches, store, embedder)
    index_report, index_meta = _write(context, keys, failed, batches, store, embedder)
    for asset_key, report, metadata in (
        (CHUNKS_KEY, chunks_report, chunks_meta), (EMBEDDINGS_KEY, embed_report, embed_meta), (INDEX_KEY, index_report, index_meta),
    ):
        if asset_key in context.selected_asset_keys:
            yield from partition_events(context, asset_key, report, metadata)
    raise_failed(index_report)


def _prepare(context, keys: list[str], failed: dict[str, str], store: ChunkIndex, workspace: WorkspaceResource, embedder: EmbedderResource):
    """memory_chunks: each tenant's changed files chunked; a tenant that cannot be prepared goes to
    ``failed`` (in a run of one tenant, the step fails)."""
    started = time.perf_counter()
    settings = workspace.settings()
    batches: dict[str, TenantChunks] = {}
    report = PartitionReport(keys, failed=failed)
    # A key added by hand that names no tenant fails the run before any work: nothing is
    # materialized for it. A tenant whose folder is gone runs while its rows remain: it removes them.
    require_known_tenants(workspace.root_path, keys, settings.teams, store.holds_tenant)
    context.log.info(f"preparing {len(keys)} tenant(s): {', '.join(keys[:10])}")
    skipped_rows: list[list[Any]] = []
    secrets: Counter = Counter()
    for key in keys:
        try:
            batch = prepare_tenant(store, workspace.root_path, Tenant.from_key(key), settings, embedder.model_name)
        except Exception as exc:  # one tenant's failure must not stop the others
            if len(keys) == 1:
                raise
            context.log.error(f"[{key}] not indexed: {type(exc).__name__}: {exc}")
            report.fail(key, f"its files could not be prepared: {type(exc).__name__}: {exc}")
            continue
        batches[key] = batch
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
    for batch in batches.values():
        for row in batch.chunks.head(PREVIEW_ROWS - len(preview_rows)).iter_rows(named=True):
            preview_rows.append([row["path"], f"L{row['start_line']}-L{row['end_line']}", row["text"][:100]])
    metadata = {
        "tenant_folders_skipped": len(folder_skips),
        "seconds": round(time.perf_counter() - started, 3),
        "secrets_redacted_by_type": dg.MetadataValue.json(dict(secrets)),
        "skipped": dg.MetadataValue.md(md_table(["tenant", "path", "reason"], skipped_rows[:50], "nothing skipped")),
        "preview": dg.MetadataValue.md(md_table(["path", "lines", "text"], preview_rows, "no changed files")),
    }
    return batches, report, metadata


FILE_FIGURES = (
    "files_seen", "files_new", "files_changed", "files_unchanged", "files_deleted", "files_skipped",
    "files_recorded_only", "malformed_lines",
)


def _embed(context, keys: list[str], failed: dict[str, str], batches: dict[str, TenantChunks], store: ChunkIndex, embedder: EmbedderResource):
    """memory_embeddings: a vector in the cache for every new chunk text of the prepared tenants."""
    started = time.perf_counter()
    model = embedder.get() if any(b.chunks.height for b in batches.values()) else _NoModel(embedder)
    embedded = embed_tenants(list(batches.values()), model, store)
    context.log.info(
        f"embedded {embedded.computed} new texts in {embedded.embed_s:.1f}s; {embedded.cache_hits} from the cache"
    )
    report = PartitionReport(keys, failed=failed)
    for key, b in batches.items():
        report.add(key, {"chunks": b.chunks.height, "distinct_texts": b.chunks["text_hash"].n_unique() if b.chunks.height else 0})
    metadata = {
        "model": embedder.model_name,
        "embeddings_computed": embedded.computed,
        "cache_hits": embedded.cache_hits,
        "embed_seconds": round(embedded.embed_s, 3),
        "cache_seconds": round(embedded.cache_s, 3),
        "seconds": round(time.perf_counter() - started, 3),
    }
    return report, metadata


class _NoModel:
    """Stands in for the embedder when there is nothing to embed, so no model is loaded."""

    def __init__(self, resource: EmbedderResource):
        self.name, self.dim = resource.model_name, resource.dim

    def embed(self, texts):  # pragma: no cover - never called with texts
        raise AssertionError("nothing to embed")


def _write(context, keys: list[str], failed: dict[str, str], batches: dict[str, TenantChunks], store: ChunkIndex, embedder: EmbedderResource):
    """memory_index: the prepared tenants' rows written and checked, a failed check repaired by the
    next run."""
    started = time.perf_counter()
    written = {key: write_tenant(store, batch, embedder.model_name) for key, batch in batches.items()}
    fts_started = time.perf_counter()
    fts_complete = store.ensure_fts_index()
    fts_s = time.perf_counter() - fts_started

    report = PartitionReport(keys, failed=failed)
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
    metadata = {
        "fts_covers_every_row": fts_complete,
        "fts_seconds": round(fts_s, 3),
        "table_rows": table.count_rows(),
        "table_version": table.version,
        "seconds": round(time.perf_counter() - started, 3),
    }
    return report, metadata


l0_assets = [l0_index]
l0_index_job = dg.define_asset_job(
    "l0_index_job", l0_assets, partitions_def=tenant_partitions,
    description="Chunk, embed and index the changed memory files of the requested tenants.",
)
