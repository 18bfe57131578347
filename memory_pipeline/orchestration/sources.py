"""The raw sources as assets: the Markdown memory and the session transcripts of each tenant.

Nothing in the pipeline writes them (people and agents do), so they are external assets
(``dg.AssetSpec``), upstream of the L0 index, consolidation and typed memories: the asset graph
starts where the data does. The workspace sensor observes them when it stats the workspace,
recording per tenant the files, bytes and newest change of each, for the tenants whose files moved.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

import dagster as dg

from memory_pipeline.orchestration.materializations import OWNERS
from memory_pipeline.orchestration.partitions import session_tenant_partitions, tenant_partitions
from memory_pipeline.sources.workspace import KIND_MEMORY, KIND_SESSIONS, WorkspaceFile

GROUP = "sources"
_CODE = dg.CodeReferencesMetadataValue(code_references=[dg.LocalFileCodeReference(file_path=__file__, line_number=1)])
MARKDOWN_MEMORY = "markdown_memory"
SESSION_TRANSCRIPTS = "session_transcripts"


def _source_spec(key: str, description: str, partitions_def, kind: str, path: str) -> dg.AssetSpec:
    """One raw source: external, per-tenant, in the sources group; ``path`` says where its files live."""
    return dg.AssetSpec(
        key,
        description=description,
        partitions_def=partitions_def,
        group_name=GROUP,
        kinds={kind},
        owners=OWNERS,
        tags={"layer": "source"},
        metadata={"path": path, "dagster/code_references": _CODE},
    )


markdown_memory = _source_spec(
    MARKDOWN_MEMORY,
    "Markdown memory of each tenant: MEMORY.md and memory/*.md (dated notes, flushed "
    "notes, dreamed files), written by people and agents.",
    tenant_partitions,
    "markdown",
    "<root>/<agent>/[users/<user>/]MEMORY.md, .../memory/**/*.md",
)
session_transcripts = _source_spec(
    SESSION_TRANSCRIPTS,
    "Session transcripts of each tenant with sessions: sessions/<user>/<id>.jsonl, one "
    "message per line, appended while the session is live.",
    session_tenant_partitions,
    "json",
    "<root>/<agent>/sessions/<user>/<session_id>.jsonl",
)
SOURCE_SPECS = [markdown_memory, session_transcripts]
_KINDS = {MARKDOWN_MEMORY: KIND_MEMORY, SESSION_TRANSCRIPTS: KIND_SESSIONS}


def source_figures(files: Sequence[WorkspaceFile], kind: str) -> dict[str, object] | None:
    """Files, bytes and newest change of one tenant's files of ``kind``; None when it has none."""
    mine = [f for f in files if f.kind == kind]
    if not mine:
        return None
    newest = max(f.mtime_ns for f in mine) / 1e9
    return {
        "files": len(mine),
        "bytes": sum(f.size for f in mine),
        "newest_change": dg.MetadataValue.timestamp(datetime.fromtimestamp(newest, tz=UTC)),
    }


def source_observations(files_by_tenant: Iterable[tuple[str, Sequence[WorkspaceFile]]]) -> list[dg.AssetObservation]:
    """One observation per source and tenant that has files of that source."""
    out = []
    for tenant, files in files_by_tenant:
        for asset, kind in _KINDS.items():
            figures = source_figures(files, kind)
            if figures is not None:
                out.append(dg.AssetObservation(asset_key=asset, partition=tenant, metadata=figures))
    return out
