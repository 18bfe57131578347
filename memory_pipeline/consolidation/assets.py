"""Consolidation assets: ``episodic_summaries -> semantic_graph -> entity_dedup`` per day x tenant.

``dreaming`` and ``compaction_flush`` (per tenant, writing Markdown that leads back into the L0
index) are in ``notes_assets``. A run may cover many partitions (a backfill runs as one run), so
the spaCy and embedding models load once and every tenant's days are read in one pass over its
transcripts. Each (day, tenant) partition gets its own figures and checks
(``report_partitions``); a tenant that fails is reported as failed after the others are done.
"""


import time
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

import dagster as dg

from memory_pipeline.config import get_settings
from memory_pipeline.consolidation.checks import (
    CHECKS,
    DEDUP_CHECK,
    EPISODES_CHECK,
    RELATIONS_CHECK,
    check_dedup,
    check_episodes,
    check_relations,
)
from memory_pipeline.consolidation.llm import LLMClient
from memory_pipeline.consolidation.partitions import DAY, TENANT, consolidation_key, consolidation_partitions
from memory_pipeline.consolidation.pipeline import build_graph, consolidate_episodes, dedup_entities
from memory_pipeline.consolidation.store import ConsolidationStore
from memory_pipeline.consolidation.timeline import supersede_tenant
from memory_pipeline.embedding import EMBEDDER_IDENTITY
from memory_pipeline.orchestration.materializations import PartitionReport, column_schema, layer_asset, report_partitions
from memory_pipeline.orchestration.resources import EmbedderResource, LanceDBResource, WorkspaceResource
from memory_pipeline.orchestration.sources import session_transcripts
from memory_pipeline.orchestration.tenant_keys import require_known_tenants
from memory_pipeline.store.tables import ENTITIES, EPISODES, RELATIONS
from memory_pipeline.tenancy import Tenant

GROUP = "consolidation"
TAGS = {"layer": "consolidation"}
consolidation_asset = layer_asset(GROUP, TAGS)
CONSOLIDATION_WRITE_POOL = "consolidation_write"
"""Steps that write the consolidation tables: one at a time, so a tenant's validity intervals and
merges are recomputed over a consistent graph (``dagster.yaml`` pools default to 1)."""
PREVIEW_ROWS = 10
BY_TENANT = dg.MultiToSingleDimensionPartitionMapping(partition_dimension_name=TENANT)
_DIM = EMBEDDER_IDENTITY[get_settings().embedder][1]


def days_by_tenant(partition_keys: list[str]) -> dict[Tenant, set[str]]:
    """The run's partitions grouped as {tenant: {day, ...}}."""
    grouped: dict[Tenant, set[str]] = defaultdict(set)
    for key in partition_keys:
        dims = consolidation_partitions.get_partition_key_from_str(key).keys_by_dimension
        grouped[Tenant.from_key(dims[TENANT])].add(dims[DAY])
    return dict(grouped)


def reported_days(report: PartitionReport, days: set[str], active: set[str]) -> list[str]:
    """The days of a tenant a step reports on: those of ``days`` holding its episodes (``active``),
    or the one day of a run of one partition. A day inside a range with no session has nothing of
    its own to report: Dagster's materialization of it carries no figures and no check is
    evaluated on it, where a check evaluation would add an event per asset (a tenant's range over
    half a year of weekly sessions is mostly such days, and each event is a write)."""
    return sorted(days if len(report.partition_keys) == 1 else days & active)


def check_spec(name: str, asset: str, partitions_def: dg.PartitionsDefinition = consolidation_partitions) -> dg.AssetCheckSpec:
    description, blocking = CHECKS[name]
    return dg.AssetCheckSpec(name, asset=asset, description=description, blocking=blocking, partitions_def=partitions_def)


def md_table(headers: list[str], rows: list[list[Any]]) -> str:
    if not rows:
        return "nothing"

    def cell(v: Any) -> str:
        return str(v).replace("|", "\\|").replace("\n", " ")[:180]

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    return "\n".join(lines + ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows])


def _store(lancedb: LanceDBResource, embedder: EmbedderResource) -> ConsolidationStore:
    return ConsolidationStore(lancedb.uri, embedder.dim)


def _fail_tenant(context, report: PartitionReport, tenant: Tenant, days: set[str], exc: Exception) -> None:
    context.log.error(f"[{tenant.key}] not consolidated: {type(exc).__name__}: {exc}")
    for day in days:
        report.fail(str(consolidation_key(day, tenant.key)), f"{type(exc).__name__}: {exc}")


def _episode_days(store: ConsolidationStore, tenant: str) -> dict[str, str]:
    """{episode id: day} of the tenant's episodes."""
    rows = store.episode_rows(tenant, columns=["id", "day"])
    return dict(zip(rows["id"].to_list(), rows["day"].to_list(), strict=True))


@consolidation_asset(
    partitions_def=consolidation_partitions,
    pool=CONSOLIDATION_WRITE_POOL,
    kinds={"python", "lancedb"},
    metadata={"dagster/column_schema": column_schema(EPISODES.name, EPISODES.schema(_DIM))},
    deps=[dg.AssetDep(session_transcripts.key, partition_mapping=BY_TENANT)],
    check_specs=[check_spec(EPISODES_CHECK, "episodic_summaries")],
)
def episodic_summaries(
    context: dg.AssetExecutionContext, workspace: WorkspaceResource, lancedb: LanceDBResource, embedder: EmbedderResource
):
    """One episode (summary, one-line abstract, key topics, vector) per session completed that day."""
    started = time.perf_counter()
    settings = workspace.settings()
    store = _store(lancedb, embedder)
    llm = LLMClient.from_env()
    now = datetime.now(UTC)
    report = PartitionReport(context.partition_keys)
    tenant_keys = {consolidation_partitions.get_partition_key_from_str(k).keys_by_dimension[TENANT] for k in report.partition_keys}
    require_known_tenants(workspace.root_path, sorted(tenant_keys), settings.teams)  # before any work: nothing materialized
    totals: Counter = Counter()
    problems, preview = [], []
    model = None
    for tenant, days in days_by_tenant(report.partition_keys).items():
        context.log.info(f"[{tenant.key}] consolidating the sessions of {len(days)} day(s)")
        try:
            model = model or embedder.get()
            done = consolidate_episodes(
                workspace.root_path, store, tenant, days, model, now,
                timedelta(minutes=settings.session_idle_minutes), timedelta(days=settings.episode_ttl_days), llm,
            )
        except Exception as exc:  # one tenant's failure must not stop the others
            _fail_tenant(context, report, tenant, days, exc)
            continue
        totals.update(done.written)
        totals.update({"sessions_open": done.open, "unchanged": done.unchanged})
        problems += [[tenant.key, p, "-", why] for p, why in done.unreadable]
        problems += [[tenant.key, p, n, why] for p, n, why in done.malformed_lines]
        problems += [[tenant.key, "LLM", "-", why] for why in done.llm_failures]
        for p, n, why in done.malformed_lines[:20]:
            context.log.warning(f"[{tenant.key}] {p} line {n} skipped: {why}")
        for why in done.llm_failures:
            context.log.warning(f"[{tenant.key}] LLM summary failed, extractive used: {why}")
        preview += [
            [d.row["session_id"], d.row["produced_by"], d.row["l0_abstract"], ", ".join(d.row["key_topics"][:5])]
            for d in done.drafts
        ]
        stored = Counter(_episode_days(store, tenant.key).values())
        outcome = check_episodes(store, tenant.key)
        for day in reported_days(report, days, set(stored) | {d.row["day"] for d in done.drafts}):
            drafts = [d for d in done.drafts if d.row["day"] == day]
            produced = Counter(d.row["produced_by"] for d in drafts)
            report.add(
                str(consolidation_key(day, tenant.key)),
                {
                    "sessions_complete": len(drafts),
                    "path_compaction": produced["compaction"],
                    "path_extractive": produced["extractive"],
                    "path_llm": produced["llm"],
                    "secrets_redacted": sum(sum(d.secrets.values()) for d in drafts),
                    "dagster/row_count": stored[day],
                },
                {EPISODES_CHECK: outcome},
            )
    metadata = {
        "llm_configured": llm is not None,
        "fts_covers_every_row": store.ensure_episode_fts(),
        "problems": len(problems),
        "seconds": round(time.perf_counter() - started, 3),
        "problems_detail": dg.MetadataValue.md(md_table(["tenant", "path", "line", "reason"], problems[:50])),
        "preview": dg.MetadataValue.md(md_table(["session", "path", "abstract", "topics"], preview[:PREVIEW_ROWS])),
    }
    # Written, updated and superseded are counted per tenant, not per day: reported for the whole run.
    whole_run = {
        "sessions_open": totals["sessions_open"], "episodes_inserted": totals["inserted"],
        "episodes_updated": totals["updated"], "episodes_superseded": totals["superseded"],
        # Sessions whose episode was built from what they hold now: not summarized again.
        "episodes_unchanged": totals["unchanged"],
    }
    yield from report_partitions(context, report, metadata, run_totals=whole_run)


@consolidation_asset(
    partitions_def=consolidation_partitions,
    pool=CONSOLIDATION_WRITE_POOL,
    kinds={"python", "spacy", "lancedb"},
    metadata={"dagster/column_schema": column_schema(RELATIONS.name, RELATIONS.schema(_DIM))},
    deps=[episodic_summaries, dg.AssetDep(session_transcripts.key, partition_mapping=BY_TENANT)],
    check_specs=[check_spec(RELATIONS_CHECK, "semantic_graph")],
)
def semantic_graph(
    context: dg.AssetExecutionContext, workspace: WorkspaceResource, lancedb: LanceDBResource, embedder: EmbedderResource
):
    """Entities and time-bounded relations (L2) read from the day's episodes and their turns, and
    the tenant's statements a later one replaced (supersession), recorded once, here."""
    started = time.perf_counter()
    store = _store(lancedb, embedder)
    llm = LLMClient.from_env()
    report = PartitionReport(context.partition_keys)
    nlp_ms = 0
    tenant_wide: Counter = Counter()
    predicates: Counter = Counter()
    failures, preview, closed, replaced = [], [], [], []
    for tenant, days in days_by_tenant(report.partition_keys).items():
        try:
            built = build_graph(workspace.root_path, store, tenant, days, embedder.get())
            timeline = supersede_tenant(workspace.root_path, lancedb.uri, tenant, embedder.get(), datetime.now(UTC), llm=llm)
        except Exception as exc:
            _fail_tenant(context, report, tenant, days, exc)
            continue
        context.log.info(f"[{tenant.key}] graph built over {len(days)} day(s); {len(timeline.records)} supersessions")
        tenant_wide.update({f"decided_{path}": n for path, n in timeline.decided_by.items()})
        tenant_wide.update({
            "supersessions": len(timeline.records), "supersessions_added": timeline.added,
            "supersessions_removed": timeline.removed,
            # Episodes read before as they are; a tenant whose statements did not change keeps its records.
            "episodes_unchanged": built.unchanged, "supersessions_kept_undecided": int(timeline.unchanged),
        })
        replaced += [[tenant.key, r["old_ref"], f"{r['old_said_at']:%Y-%m-%d}", r["new_ref"],
                      f"{r['new_said_at']:%Y-%m-%d}", r["decided_by"]] for r in timeline.records]
        nlp_ms += int(built.nlp_s * 1000)
        tenant_wide.update({
            "entities_new": built.entities_new, "relations_removed": built.relations_removed,
            "secrets_redacted": sum(built.secrets.values()),
        })
        predicates.update(built.predicates)
        failures += [[tenant.key, f] for f in built.failures]
        for failure in built.failures:
            context.log.warning(f"[{tenant.key}] {failure}")
        preview += [
            [r["subject"], r["predicate"], r["object"], f"{r['valid_from']:%Y-%m-%d}" if r["valid_from"] else "", r["rule"]]
            for r in sorted(built.relations, key=lambda r: -r["confidence"])
        ]
        # valid_to is the copy of each relation's supersession record: as the graph left it, then supersession.
        changed = {r["id"]: r for r in [*built.validity_changed, *timeline.relations_changed]}.values()
        closed += [[r["subject"], r["predicate"], r["object"], f"{r['valid_to']:%Y-%m-%d}"] for r in changed if r["valid_to"]]
        day_of = _episode_days(store, tenant.key)
        stored = Counter(day_of.get(e) for e in store.relation_rows(tenant.key, columns=["source_episode"])["source_episode"].to_list())
        outcome = check_relations(store, tenant.key)
        for day in reported_days(report, days, set(day_of.values())):
            mine = [r for r in built.relations if day_of.get(r["source_episode"]) == day]
            report.add(
                str(consolidation_key(day, tenant.key)),
                {
                    "episodes_read": sum(1 for d in day_of.values() if d == day),
                    "relations_written": len(mine),
                    "relations_closed": sum(
                        1 for r in changed if r["valid_to"] and day_of.get(r["source_episode"]) == day
                    ),
                    "dagster/row_count": stored[day],
                },
                {RELATIONS_CHECK: outcome},
            )
    metadata = {
        "extraction_failures": len(failures),
        "supersessions_decided_by": dg.MetadataValue.json({k[8:]: v for k, v in tenant_wide.items() if k.startswith("decided_")}),
        "superseded": dg.MetadataValue.md(md_table(
            ["tenant", "statement", "said", "replaced by", "on", "decided by"], replaced[:PREVIEW_ROWS])),
        "nlp_seconds": round(nlp_ms / 1000, 3),
        "seconds": round(time.perf_counter() - started, 3),
        "predicates": dg.MetadataValue.json(dict(predicates.most_common())),
        "failures": dg.MetadataValue.md(md_table(["tenant", "failure"], failures[:50])),
        "closed": dg.MetadataValue.md(md_table(["subject", "predicate", "object", "valid_to"], closed[:PREVIEW_ROWS])),
        "preview": dg.MetadataValue.md(md_table(["subject", "predicate", "object", "since", "rule"], preview[:PREVIEW_ROWS])),
    }
    # New entities, removed relations, supersessions and secrets are counted per tenant, not per day.
    whole_run = {
        name: tenant_wide[name]
        for name in ("supersessions", "supersessions_added", "supersessions_removed", "entities_new",
                     "relations_removed", "secrets_redacted", "episodes_unchanged", "supersessions_kept_undecided")
    }
    yield from report_partitions(context, report, metadata, run_totals=whole_run)


@consolidation_asset(
    partitions_def=consolidation_partitions,
    pool=CONSOLIDATION_WRITE_POOL,
    kinds={"python", "lancedb"},
    metadata={"dagster/column_schema": column_schema(ENTITIES.name, ENTITIES.schema(_DIM))},
    deps=[semantic_graph],
    check_specs=[check_spec(DEDUP_CHECK, "entity_dedup")],
)
def entity_dedup(context: dg.AssetExecutionContext, lancedb: LanceDBResource, embedder: EmbedderResource):
    """The tenant's entities with duplicates merged, ambiguous pairs flagged and relations re-pointed."""
    started = time.perf_counter()
    store = _store(lancedb, embedder)
    now = datetime.now(UTC)
    report = PartitionReport(context.partition_keys)
    merged, ambiguous = [], []
    for tenant, days in days_by_tenant(report.partition_keys).items():
        try:
            done = dedup_entities(store, tenant, now)
        except Exception as exc:
            _fail_tenant(context, report, tenant, days, exc)
            continue
        context.log.info(f"[{tenant.key}] {len(done.merged)} entities merged, {len(done.ambiguous)} pairs flagged")
        merged += [[done.names[d.from_id], done.names[d.into_id], d.reason, d.score] for d in done.merged]
        ambiguous += [[done.names[d.from_id], done.names[d.into_id], d.reason, d.score] for d in done.ambiguous]
        # Deduplication is over the tenant's whole graph: each of its days reports the tenant's figures.
        figures = {
            "entities_before": done.entities,
            "merged": len(done.merged),
            "ambiguous_flagged": len(done.ambiguous),
            "relations_repointed": done.relations_repointed,
            "dagster/row_count": store.entity_rows(tenant.key, columns=["id"]).height,
        }
        outcome = check_dedup(store, tenant.key)
        for day in reported_days(report, days, set(_episode_days(store, tenant.key).values())):
            report.add(str(consolidation_key(day, tenant.key)), figures, {DEDUP_CHECK: outcome})
    metadata = {
        "seconds": round(time.perf_counter() - started, 3),
        "merges": dg.MetadataValue.md(md_table(["merged", "into", "reason", "score"], merged[:50])),
        "ambiguous": dg.MetadataValue.md(md_table(["entity", "maybe", "reason", "score"], ambiguous[:50])),
    }
    yield from report_partitions(context, report, metadata)


consolidation_assets = [episodic_summaries, semantic_graph, entity_dedup]
consolidation_job = dg.define_asset_job(
    "consolidation_job",
    selection=dg.AssetSelection.assets(*consolidation_assets),
    partitions_def=consolidation_partitions,
    description="Summarize the sessions completed on a day into episodes, then the graph and its deduplication.",
)
