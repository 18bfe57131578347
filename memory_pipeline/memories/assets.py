"""The ``typed_memories`` asset: typed memories extracted from each tenant's transcripts and notes.

Partitioned by tenant; a run over many tenants loads spaCy and the embedder once. Which files are
read comes from run tags set by ``memory-pipeline memories ingest`` (``SOURCE_TAG``,
``MAX_AGE_TAG``); a run without them reads every transcript and note. Each tenant's partition
gets its own figures and check; a tenant that fails is reported as failed after the others are
extracted. The ``typed_memories_sensor`` requests it whenever the workspace sensor observes a tenant's
sources changing.
"""


import time
from datetime import UTC, datetime

import dagster as dg

from memory_pipeline.config import get_settings
from memory_pipeline.consolidation.supersession import supersede_tenant
from memory_pipeline.embedding import EMBEDDER_IDENTITY
from memory_pipeline.memories.checks import DESCRIPTION, MEMORIES_CHECK, check_memories
from memory_pipeline.memories.operations import TypedMemories
from memory_pipeline.memories.pipeline import SOURCE_KINDS, ingest_tenant
from memory_pipeline.orchestration import materializations as reporting
from memory_pipeline.orchestration.partitions import LINEAGE_ONLY, tenant_partitions
from memory_pipeline.orchestration.pools import EMBEDDING_POOL
from memory_pipeline.orchestration.resources import EmbedderResource, LanceDBResource, WorkspaceResource
from memory_pipeline.orchestration.sources import markdown_memory, session_transcripts
from memory_pipeline.store.tables import MEMORIES
from memory_pipeline.tenancy import Tenant

GROUP = "typed_memories"
memories_asset = reporting.layer_asset(GROUP, {"layer": "memories"})
SOURCE_TAG = "memory_pipeline/typed_memories_source"
MAX_AGE_TAG = "memory_pipeline/typed_memories_max_age_days"
_DIM = EMBEDDER_IDENTITY[get_settings().embedder][1]


class _LazyEmbedder:
    """The resource's embedder, loaded on the first text to embed: a run where every file is
    unchanged never loads the model."""

    def __init__(self, resource: EmbedderResource):
        self.resource = resource
        self.name = resource.model_name
        self.dim = resource.dim

    def embed(self, texts):
        return self.resource.get().embed(texts)

    def count_tokens(self, text: str) -> int:
        return self.resource.get().count_tokens(text)


def _options(context: dg.AssetExecutionContext) -> tuple[str, int | None]:
    tags = context.run.tags
    source = tags.get(SOURCE_TAG, "all")
    if source not in SOURCE_KINDS:
        raise dg.Failure(f"run tag {SOURCE_TAG}={source!r}: use markdown, transcript or all")
    raw = tags.get(MAX_AGE_TAG)
    try:
        max_age = int(raw) if raw not in (None, "") else None
    except ValueError:
        raise dg.Failure(f"run tag {MAX_AGE_TAG}={raw!r}: expected a whole number of days") from None
    return source, max_age


@memories_asset(
    partitions_def=tenant_partitions,
    kinds={"python", "spacy", "lancedb"},
    pool=EMBEDDING_POOL,
    metadata={"dagster/column_schema": reporting.column_schema(MEMORIES.name, MEMORIES.schema(_DIM))},
    deps=[markdown_memory.key, dg.AssetDep(session_transcripts.key, partition_mapping=LINEAGE_ONLY)],
    check_specs=[dg.AssetCheckSpec(MEMORIES_CHECK, asset="typed_memories", description=DESCRIPTION, partitions_def=tenant_partitions)],
)
def typed_memories(
    context: dg.AssetExecutionContext,
    workspace: WorkspaceResource,
    lancedb: LanceDBResource,
    embedder: EmbedderResource,
):
    """Typed memories (identity, preference, event, todo, ...) of each tenant, in the memories table."""
    started = time.perf_counter()
    source, max_age = _options(context)
    typed = TypedMemories.open(lancedb.uri, _LazyEmbedder(embedder))
    if reporting.checks_only(context):
        yield from reporting.report_stored_checks(context, MEMORIES_CHECK, lambda key: check_memories(typed.store, key))
        return
    report = reporting.PartitionReport(context.partition_keys)
    preview = []
    for key in report.partition_keys:
        tenant = Tenant.from_key(key)
        try:
            ingested = ingest_tenant(
                typed, workspace.root, tenant, source=source, max_age_days=max_age,
                max_file_bytes=workspace.settings().max_file_bytes, actor=f"run:{context.run_id[:8]}",
            )
            # New memories are compared with what the tenant said before (consolidation/supersession.py);
            # with no statement and no rule changed since the records were decided, they stand as they are.
            timeline = supersede_tenant(workspace.root, lancedb.uri, tenant, embedder.get(), datetime.now(UTC))
            supersessions = len(timeline.records)
        except Exception as exc:
            reporting.fail_partition(context, report, key, "typed memories not extracted", exc)
            continue
        for path, reason in ingested.skipped:
            context.log.warning(f"{key}: {path} not read: {reason}")
        preview += [[key, p["type"], p["source_ref"], p["happens_at"] or ""] for p in ingested.preview[:4]]
        report.add(
            key,
            {
                **{name: getattr(ingested, name) for name in FIGURES},
                "files_skipped": len(ingested.skipped),
                "supersessions": supersessions,
                "by_type": dg.MetadataValue.json(ingested.by_type),
                "dagster/row_count": typed.store.memory_rows(key).height,
            },
            {MEMORIES_CHECK: check_memories(typed.store, key)},
        )
    metadata = {
        "source": source,
        "seconds": round(time.perf_counter() - started, 2),
        "preview": dg.MetadataValue.md(reporting.md_table(["tenant", "type", "from", "happens_at"], preview[:12])),
    }
    yield from reporting.report_partitions(context, report, metadata)


FIGURES = (
    "files_extracted", "files_unchanged", "files_removed", "files_older", "memories_written", "memories_removed",
    "blocked", "secrets_redacted",
)


typed_memories_job = dg.define_asset_job(
    "typed_memories_job", [typed_memories], partitions_def=tenant_partitions,
    description="Extract typed memories from transcripts and notes, incrementally by content hash.",
)

typed_memory_assets = [typed_memories]
