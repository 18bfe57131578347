"""Consolidation assets: ``episodic_summaries -> semantic_graph -> entity_dedup`` per day x tenant,
and ``dreaming`` per tenant, whose file leads back into the L0 index (``memory_chunks``).

A run may cover many partitions (a backfill runs as one run), so the spaCy and embedding models
load once and every tenant's days are read in one pass over its transcripts.
"""


import time
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

import dagster as dg

from memory_pipeline.consolidation.checks import EPISODES_CHECK, episodes_check
from memory_pipeline.consolidation.llm import LLMClient
from memory_pipeline.consolidation.partitions import DAY, TENANT, consolidation_partitions
from memory_pipeline.consolidation.pipeline import build_graph, consolidate_episodes, dedup_entities, dream
from memory_pipeline.consolidation.store import ConsolidationStore
from memory_pipeline.consolidation.timeline import supersede_tenant
from memory_pipeline.orchestration.partitions import tenant_partitions
from memory_pipeline.orchestration.resources import EmbedderResource, LanceDBResource, WorkspaceResource
from memory_pipeline.tenancy import Tenant

GROUP = "consolidation"
CONSOLIDATION_WRITE_POOL = "consolidation_write"
"""Steps that write the consolidation tables: one at a time, so a tenant's validity intervals and
merges are recomputed over a consistent graph (``dagster.yaml`` pools default to 1)."""
PREVIEW_ROWS = 10
_BY_TENANT = dg.MultiToSingleDimensionPartitionMapping(partition_dimension_name=TENANT)


def days_by_tenant(context: dg.AssetExecutionContext) -> dict[Tenant, set[str]]:
    """The run's partitions grouped as {tenant: {day, ...}}."""
    grouped: dict[Tenant, set[str]] = defaultdict(set)
    for key in context.partition_keys:
        dims = consolidation_partitions.get_partition_key_from_str(key).keys_by_dimension
        grouped[Tenant.from_key(dims[TENANT])].add(dims[DAY])
    return dict(grouped)


def md_table(headers: list[str], rows: list[list[Any]]) -> str:
    if not rows:
        return "nothing"

    def cell(v: Any) -> str:
        return str(v).replace("|", "\\|").replace("\n", " ")[:180]

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    return "\n".join(lines + ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows])


_SHARED = {"backfill_policy": dg.BackfillPolicy.single_run(), "group_name": GROUP, "pool": CONSOLIDATION_WRITE_POOL}
"""What every consolidation asset shares: a backfill is one run, one group, one write pool."""


def _store(lancedb: LanceDBResource, embedder: EmbedderResource) -> ConsolidationStore:
    return ConsolidationStore(lancedb.uri, embedder.dim)


@dg.asset(
    partitions_def=consolidation_partitions,
    **_SHARED,
    kinds={"python", "lancedb"},
    check_specs=[dg.AssetCheckSpec(EPISODES_CHECK, asset="episodic_summaries")],
)
def episodic_summaries(
    context: dg.AssetExecutionContext, workspace: WorkspaceResource, lancedb: LanceDBResource, embedder: EmbedderResource
) -> dg.MaterializeResult:
    """One episode (summary, one-line abstract, key topics, vector) per session completed that day."""
    started = time.perf_counter()
    settings = workspace.settings()
    store = _store(lancedb, embedder)
    llm = LLMClient.from_env()
    now = datetime.now(UTC)
    totals: Counter = Counter()
    paths: Counter = Counter()
    secrets: Counter = Counter()
    problems, preview = [], []
    model = None
    for tenant, days in days_by_tenant(context).items():
        model = model or embedder.get()
        report = consolidate_episodes(
            workspace.root_path, store, tenant, days, model, now,
            timedelta(minutes=settings.session_idle_minutes), timedelta(days=settings.episode_ttl_days), llm,
        )
        totals.update(report.written)
        totals.update({"sessions_complete": report.complete, "sessions_open": report.open})
        paths.update(report.paths)
        secrets.update(report.secrets)
        problems += [[tenant.key, p, "-", why] for p, why in report.unreadable]
        problems += [[tenant.key, p, n, why] for p, n, why in report.malformed_lines]
        problems += [[tenant.key, "LLM", "-", why] for why in report.llm_failures]
        for p, n, why in report.malformed_lines[:20]:
            context.log.warning(f"[{tenant.key}] {p} line {n} skipped: {why}")
        for why in report.llm_failures:
            context.log.warning(f"[{tenant.key}] LLM summary failed, extractive used: {why}")
        preview += [
            [d.row["session_id"], d.row["produced_by"], d.row["l0_abstract"], ", ".join(d.row["key_topics"][:5])]
            for d in report.drafts
        ]
    fts_complete = store.ensure_episode_fts()
    check = episodes_check(store, list(days_by_tenant(context)))
    return dg.MaterializeResult(
        metadata={
            "sessions_complete": totals["sessions_complete"],
            "sessions_open": totals["sessions_open"],
            "episodes_inserted": totals["inserted"],
            "episodes_updated": totals["updated"],
            "episodes_superseded": totals["superseded"],
            "path_compaction": paths["compaction"],
            "path_extractive": paths["extractive"],
            "path_llm": paths["llm"],
            "llm_configured": llm is not None,
            "fts_covers_every_row": fts_complete,
            "problems": len(problems),
            "secrets_redacted": sum(secrets.values()),
            "seconds": round(time.perf_counter() - started, 3),
            "problems_detail": dg.MetadataValue.md(md_table(["tenant", "path", "line", "reason"], problems[:50])),
            "preview": dg.MetadataValue.md(md_table(["session", "path", "abstract", "topics"], preview[:PREVIEW_ROWS])),
        },
        check_results=[check],
    )


@dg.asset(
    partitions_def=consolidation_partitions,
    **_SHARED,
    kinds={"python", "spacy", "lancedb"},
    deps=[episodic_summaries],
)
def semantic_graph(
    context: dg.AssetExecutionContext, workspace: WorkspaceResource, lancedb: LanceDBResource, embedder: EmbedderResource
) -> dg.MaterializeResult:
    """Entities and time-bounded relations (L2) read from the day's episodes and their turns, and
    the tenant's statements a later one replaced (supersession), recorded once, here."""
    started = time.perf_counter()
    store = _store(lancedb, embedder)
    totals: Counter = Counter()
    predicates: Counter = Counter()
    failures, preview, closed, replaced = [], [], [], []
    llm = LLMClient.from_env()
    for tenant, days in days_by_tenant(context).items():
        report = build_graph(workspace.root_path, store, tenant, days, embedder.get())
        timeline = supersede_tenant(workspace.root_path, lancedb.uri, tenant, embedder.get(), datetime.now(UTC), llm=llm)
        totals.update({"supersessions": len(timeline.records), "supersessions_added": timeline.added,
                       "supersessions_removed": timeline.removed})
        totals.update({f"decided_{path}": n for path, n in timeline.decided_by.items()})
        replaced += [[tenant.key, r["old_ref"], f"{r['old_said_at']:%Y-%m-%d}", r["new_ref"],
                      f"{r['new_said_at']:%Y-%m-%d}", r["decided_by"]] for r in timeline.records]
        totals.update({
            "episodes": report.episodes, "entities_new": report.entities_new,
            "relations": len(report.relations), "relations_removed": report.relations_removed,
            "validity_closed": sum(1 for r in report.validity_changed if r["valid_to"] is not None),
        })
        totals["nlp_ms"] += int(report.nlp_s * 1000)
        totals["secrets_redacted"] += sum(report.secrets.values())
        predicates.update(report.predicates)
        failures += [[tenant.key, f] for f in report.failures]
        for failure in report.failures:
            context.log.warning(f"[{tenant.key}] {failure}")
        preview += [
            [r["subject"], r["predicate"], r["object"], f"{r['valid_from']:%Y-%m-%d}" if r["valid_from"] else "", r["rule"]]
            for r in sorted(report.relations, key=lambda r: -r["confidence"])
        ]
        closed += [[r["subject"], r["predicate"], r["object"], f"{r['valid_to']:%Y-%m-%d}"] for r in report.validity_changed if r["valid_to"]]
    return dg.MaterializeResult(
        metadata={
            "episodes_read": totals["episodes"],
            "supersessions": totals["supersessions"],
            "supersessions_added": totals["supersessions_added"],
            "supersessions_removed": totals["supersessions_removed"],
            "supersessions_decided_by": dg.MetadataValue.json({k[8:]: v for k, v in totals.items() if k.startswith("decided_")}),
            "superseded": dg.MetadataValue.md(md_table(
                ["tenant", "statement", "said", "replaced by", "on", "decided by"], replaced[:PREVIEW_ROWS])),
            "entities_new": totals["entities_new"],
            "relations_written": totals["relations"],
            "relations_removed": totals["relations_removed"],
            "relations_closed": totals["validity_closed"],
            "extraction_failures": len(failures),
            "secrets_redacted": totals["secrets_redacted"],
            "nlp_seconds": round(totals["nlp_ms"] / 1000, 3),
            "seconds": round(time.perf_counter() - started, 3),
            "predicates": dg.MetadataValue.json(dict(predicates.most_common())),
            "failures": dg.MetadataValue.md(md_table(["tenant", "failure"], failures[:50])),
            "closed": dg.MetadataValue.md(md_table(["subject", "predicate", "object", "valid_to"], closed[:PREVIEW_ROWS])),
            "preview": dg.MetadataValue.md(md_table(["subject", "predicate", "object", "since", "rule"], preview[:PREVIEW_ROWS])),
        }
    )


@dg.asset(
    partitions_def=consolidation_partitions,
    **_SHARED,
    kinds={"python", "lancedb"},
    deps=[semantic_graph],
)
def entity_dedup(
    context: dg.AssetExecutionContext, lancedb: LanceDBResource, embedder: EmbedderResource
) -> dg.MaterializeResult:
    """The tenant's entities with duplicates merged, ambiguous pairs flagged and relations re-pointed."""
    started = time.perf_counter()
    store = _store(lancedb, embedder)
    now = datetime.now(UTC)
    merged, ambiguous, totals = [], [], Counter()
    for tenant in days_by_tenant(context):
        report = dedup_entities(store, tenant, now)
        totals.update({"entities": report.entities, "repointed": report.relations_repointed})
        merged += [[report.names[d.from_id], report.names[d.into_id], d.reason, d.score] for d in report.merged]
        ambiguous += [[report.names[d.from_id], report.names[d.into_id], d.reason, d.score] for d in report.ambiguous]
    return dg.MaterializeResult(
        metadata={
            "entities_before": totals["entities"],
            "merged": len(merged),
            "ambiguous_flagged": len(ambiguous),
            "relations_repointed": totals["repointed"],
            "seconds": round(time.perf_counter() - started, 3),
            "merges": dg.MetadataValue.md(md_table(["merged", "into", "reason", "score"], merged[:50])),
            "ambiguous": dg.MetadataValue.md(md_table(["entity", "maybe", "reason", "score"], ambiguous[:50])),
        }
    )


@dg.asset(
    partitions_def=tenant_partitions,
    **_SHARED,
    kinds={"python", "markdown"},
    deps=[
        dg.AssetDep(episodic_summaries, partition_mapping=_BY_TENANT),
        dg.AssetDep(entity_dedup, partition_mapping=_BY_TENANT),
    ],
)
def dreaming(
    context: dg.AssetExecutionContext, workspace: WorkspaceResource, lancedb: LanceDBResource, embedder: EmbedderResource
) -> dg.MaterializeResult:
    """The tenant's oldest unpromoted episodes promoted into ``_system/dreaming/YYYYMMDD-consolidated.md``."""
    started = time.perf_counter()
    store = _store(lancedb, embedder)
    llm = LLMClient.from_env()
    now = datetime.now(UTC)
    rows, refused, texts, produced = [], [], [], Counter()
    promoted = added = secrets = 0
    for key in context.partition_keys:
        tenant = Tenant.from_key(key)
        report = dream(workspace.root_path, store, tenant, now, llm)
        if report.llm_error:
            context.log.warning(f"[{key}] LLM dreaming failed, extractive used: {report.llm_error}")
        for problem in report.problems:
            context.log.warning(f"[{key}] {problem}")
        if report.refused:
            context.log.error(f"[{key}] {report.refused}")
            refused.append([key, report.refused])
            continue
        if report.result is None:
            continue
        promoted += len(report.episodes)
        added += report.result.lines_added
        secrets += report.result.secrets_redacted
        produced[report.produced_by] += 1
        rel = report.result.path.relative_to(workspace.root_path).as_posix()
        rows.append([key, rel, len(report.episodes), report.result.lines_added, report.result.lines_total])
        texts.append(f"### {rel}\n\n{report.result.text[:3000]}")
    return dg.MaterializeResult(
        metadata={
            "episodes_promoted": promoted,
            "lines_added": added,
            "files_written": len(rows),
            "refused_human_files": len(refused),
            "path_llm": produced["llm"],
            "path_extractive": produced["extractive"],
            "secrets_redacted": secrets,
            "seconds": round(time.perf_counter() - started, 3),
            "files": dg.MetadataValue.md(md_table(["tenant", "path", "episodes", "added", "lines"], rows)),
            "refused": dg.MetadataValue.md(md_table(["tenant", "reason"], refused)),
            "preview": dg.MetadataValue.md("\n\n".join(texts) or "no unpromoted episodes"),
        }
    )


consolidation_assets = [episodic_summaries, semantic_graph, entity_dedup]
consolidation_job = dg.define_asset_job(
    "consolidation_job", consolidation_assets, partitions_def=consolidation_partitions,
    description="Summarize the sessions completed on a day into episodes, then the graph and its deduplication.",
)
dreaming_job = dg.define_asset_job(
    "dreaming_job", [dreaming], partitions_def=tenant_partitions,
    description="Promote a tenant's oldest unpromoted episodes into its dreaming Markdown file.",
)
