"""The ``typed_memories`` asset: typed memories extracted from each tenant's transcripts and notes.

Partitioned by tenant; a run over many tenants loads spaCy and the embedder once. Which files are
read comes from run tags set by ``memory-pipeline graph ingest`` (``SOURCE_TAG``,
``MAX_AGE_TAG``); a run without them reads every transcript and note.
"""


import time
from datetime import UTC, datetime

import dagster as dg

from memory_pipeline.consolidation.timeline import supersede_tenant
from memory_pipeline.memories.operations import MemoryGraph
from memory_pipeline.memories.pipeline import SOURCE_KINDS, ingest_tenant
from memory_pipeline.orchestration.partitions import tenant_partitions
from memory_pipeline.orchestration.pools import EMBEDDING_POOL
from memory_pipeline.orchestration.resources import EmbedderResource, LanceDBResource, WorkspaceResource
from memory_pipeline.tenancy import Tenant

GROUP = "memory_graph"
SOURCE_TAG = "memory_pipeline/graph_source"
MAX_AGE_TAG = "memory_pipeline/graph_max_age_days"


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


@dg.asset(
    partitions_def=tenant_partitions,
    backfill_policy=dg.BackfillPolicy.single_run(),
    group_name=GROUP,
    kinds={"python", "spacy", "lancedb"},
    pool=EMBEDDING_POOL,
)
def typed_memories(
    context: dg.AssetExecutionContext,
    workspace: WorkspaceResource,
    lancedb: LanceDBResource,
    embedder: EmbedderResource,
) -> dg.MaterializeResult:
    """Typed memories (identity, preference, event, todo, ...) of each tenant, in the memories table."""
    started = time.perf_counter()
    source, max_age = _options(context)
    graph = MemoryGraph.open(lancedb.uri, _LazyEmbedder(embedder))
    totals = {"files_extracted": 0, "files_unchanged": 0, "files_removed": 0, "memories_written": 0,
              "memories_removed": 0, "blocked": 0, "secrets_redacted": 0}
    by_type: dict[str, int] = {}
    preview = []
    supersessions = 0
    for key in context.partition_keys:
        tenant = Tenant.from_key(key)
        report = ingest_tenant(
            graph, workspace.root, tenant, source=source, max_age_days=max_age,
            max_file_bytes=workspace.settings().max_file_bytes, actor=f"run:{context.run_id[:8]}",
        )
        if report.memories_written or report.memories_removed:
            # New memories are compared with what the tenant said before (consolidation/timeline.py).
            timeline = supersede_tenant(workspace.root, lancedb.uri, tenant, embedder.get(), datetime.now(UTC))
            supersessions += len(timeline.records)
        for name in totals:
            totals[name] += getattr(report, name)
        for kind, n in report.by_type.items():
            by_type[kind] = by_type.get(kind, 0) + n
        preview += [[key, p["type"], p["source_ref"], p["happens_at"] or ""] for p in report.preview[:4]]
        for path, reason in report.skipped:
            context.log.warning(f"{key}: {path} not read: {reason}")
    table = ["| tenant | type | from | happens_at |", "|---|---|---|---|"]
    table += ["| " + " | ".join(str(c).replace("|", "\\|")[:120] for c in row) + " |" for row in preview[:12]]
    return dg.MaterializeResult(
        metadata={
            **totals,
            "supersessions": supersessions,
            "by_type": dg.MetadataValue.json(by_type),
            "source": source,
            "tenants": len(context.partition_keys),
            "seconds": round(time.perf_counter() - started, 2),
            "preview": dg.MetadataValue.md("\n".join(table)),
        }
    )


graph_ingest_job = dg.define_asset_job(
    "graph_ingest_job", [typed_memories], partitions_def=tenant_partitions,
    description="Extract typed memories from transcripts and notes, incrementally by content hash.",
)

graph_assets = [typed_memories]
