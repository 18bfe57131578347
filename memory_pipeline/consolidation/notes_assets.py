"""The consolidation assets that write Markdown notes, per tenant with sessions: ``dreaming``
(episodes promoted into ``_system/dreaming/YYYYMMDD-consolidated.md``) and ``compaction_flush``
(key facts of long live sessions appended to ``memory/YYYY-MM-DD.md``). Both notes lead back into
the L0 index (``memory_chunks`` depends on them), which indexes them like any memory file.
"""


import time
from collections import Counter
from datetime import UTC, datetime

import dagster as dg

from memory_pipeline.consolidation.assets import (
    CONSOLIDATION_WRITE_POOL,
    check_spec,
    consolidation_asset,
    entity_dedup,
    episodic_summaries,
)
from memory_pipeline.consolidation.checks import DREAMING_CHECK, check_dreaming
from memory_pipeline.consolidation.pipeline import dream
from memory_pipeline.consolidation.store import ConsolidationStore
from memory_pipeline.episodes.dreaming import dreamed_files
from memory_pipeline.episodes.flush import HEADINGS, flush_session
from memory_pipeline.episodes.sessions import session_files
from memory_pipeline.llm.client import LLMClient
from memory_pipeline.orchestration.materializations import (
    PartitionReport,
    checks_only,
    fail_partition,
    md_table,
    report_partitions,
    report_stored_checks,
)
from memory_pipeline.orchestration.partitions import session_tenant_partitions
from memory_pipeline.orchestration.resources import EmbedderResource, LanceDBResource, WorkspaceResource
from memory_pipeline.orchestration.sources import session_transcripts
from memory_pipeline.tenancy import Tenant


@consolidation_asset(
    partitions_def=session_tenant_partitions,
    pool=CONSOLIDATION_WRITE_POOL,
    kinds={"python", "markdown"},
    deps=[episodic_summaries, entity_dedup],
    check_specs=[check_spec(DREAMING_CHECK, "dreaming", session_tenant_partitions)],
)
def dreaming(context: dg.AssetExecutionContext, workspace: WorkspaceResource, lancedb: LanceDBResource, embedder: EmbedderResource):
    """The tenant's oldest unpromoted episodes promoted into ``_system/dreaming/YYYYMMDD-consolidated.md``."""
    started = time.perf_counter()
    store = ConsolidationStore(lancedb.uri, embedder.dim)
    if checks_only(context):  # the tenants' dreamed files as they are now
        yield from report_stored_checks(context, DREAMING_CHECK, lambda key: check_dreaming(
            workspace.root_path, store, key, dreamed_files(workspace.root_path, Tenant.from_key(key)), []))
        return
    llm = LLMClient.from_env()
    now = datetime.now(UTC)
    report = PartitionReport(context.partition_keys)
    rows, refused, texts = [], [], []
    for key in report.partition_keys:
        try:
            done = dream(workspace.root_path, store, Tenant.from_key(key), now, llm)
        except Exception as exc:
            fail_partition(context, report, key, "not dreamed", exc)
            continue
        if done.llm_error:
            context.log.warning(f"[{key}] LLM dreaming failed, extractive used: {done.llm_error}")
        for problem in done.problems:
            context.log.warning(f"[{key}] {problem}")
        if done.refused:
            context.log.error(f"[{key}] {done.refused}")
            refused.append([key, done.refused])
        written = done.result if not done.refused else None
        files = [written.path] if written is not None else []
        promoted = [e["id"] for e in done.episodes] if written is not None else []
        if written is not None:
            rel = written.path.relative_to(workspace.root_path).as_posix()
            rows.append([key, rel, len(done.episodes), written.lines_added, written.lines_total])
            texts.append(f"### {rel}\n\n{written.text[:3000]}")
        report.add(
            key,
            {
                "episodes_promoted": len(promoted),
                "lines_added": written.lines_added if written else 0,
                "files_written": len(files),
                "refused_human_files": int(bool(done.refused)),
                "path_llm": int(written is not None and done.produced_by == "llm"),
                "path_extractive": int(written is not None and done.produced_by == "extractive"),
                "secrets_redacted": written.secrets_redacted if written else 0,
            },
            {DREAMING_CHECK: check_dreaming(workspace.root_path, store, key, files, promoted)},
        )
    metadata = {
        "seconds": round(time.perf_counter() - started, 3),
        "files": dg.MetadataValue.md(md_table(["tenant", "path", "episodes", "added", "lines"], rows)),
        "refused": dg.MetadataValue.md(md_table(["tenant", "reason"], refused)),
        "preview": dg.MetadataValue.md("\n\n".join(texts) or "no unpromoted episodes"),
    }
    yield from report_partitions(context, report, metadata)


class FlushWindow(dg.Config):
    """Turns ``start:end`` of one transcript (relative to the workspace root); ``end`` None: to the last."""

    path: str
    start: int = 0
    end: int | None = None


class FlushConfig(dg.Config):
    """The windows the flush sensor found past a threshold; none (a run launched by hand): every
    transcript of the tenant, whole (a flush never appends a line twice)."""

    sessions: list[FlushWindow] = []


@consolidation_asset(
    partitions_def=session_tenant_partitions,
    kinds={"python", "markdown"},
    deps=[session_transcripts.key],
)
def compaction_flush(context: dg.AssetExecutionContext, config: FlushConfig, workspace: WorkspaceResource):
    """Key facts, preferences, decisions and action items of long live sessions, appended to ``memory/YYYY-MM-DD.md``."""
    started = time.perf_counter()
    now = datetime.now(UTC)
    report = PartitionReport(context.partition_keys)
    rows, problems = [], []
    for key in report.partition_keys:
        tenant = Tenant.from_key(key)
        windows = [w for w in config.sessions if w.path.startswith(f"{tenant.agent_id}/sessions/{tenant.user_id}/")]
        if not config.sessions:
            windows = [FlushWindow(path=f.path) for f in session_files(workspace.root_path, tenant)]
        added: Counter = Counter()
        flushed = duplicates = secrets = skipped = 0
        for window in windows:
            try:
                result = flush_session(workspace.root_path, tenant, window.path, window.start, window.end, now)
            except (ValueError, PermissionError) as exc:  # a bad transcript or a team member's: skipped with its reason
                context.log.warning(f"[{key}] {exc}")
                problems.append([key, str(exc)])
                skipped += 1
                continue
            flushed += 1
            added.update(result.added)
            duplicates += result.skipped_duplicates
            secrets += result.secrets_redacted
            note = result.path.relative_to(workspace.root_path).as_posix()
            rows.append([key, window.path, f"{window.start}:{'' if window.end is None else window.end}", note, result.total])
        report.add(key, {
            "sessions_flushed": flushed,
            "sessions_skipped": skipped,
            "lines_added": sum(added.values()),
            **{f"added_{kind}": added[kind] for kind in HEADINGS},
            "skipped_duplicates": duplicates,
            "secrets_redacted": secrets,
        })
    metadata = {
        "seconds": round(time.perf_counter() - started, 3),
        "flushed": dg.MetadataValue.md(md_table(["tenant", "transcript", "turns", "note", "lines added"], rows[:50])),
        "problems": dg.MetadataValue.md(md_table(["tenant", "reason"], problems[:50])),
    }
    yield from report_partitions(context, report, metadata)


dreaming_job = dg.define_asset_job(
    "dreaming_job",
    selection=dg.AssetSelection.assets(dreaming),
    partitions_def=session_tenant_partitions,
    description="Promote a tenant's oldest unpromoted episodes into its dreaming Markdown file.",
)
compaction_flush_job = dg.define_asset_job(
    "compaction_flush_job",
    selection=dg.AssetSelection.assets(compaction_flush),
    partitions_def=session_tenant_partitions,
    description="Append the key facts of long live sessions to the tenant's dated note before they are compacted.",
)
