"""Consolidation assets: ``episodic_summaries -> semantic_graph -> entity_dedup`` per tenant with sessions.

``dreaming`` and ``compaction_flush`` (per tenant, writing Markdown that leads back into the L0
index) are in ``notes_assets``. A run may cover many tenants (a backfill, ``consolidate --all``
or a sensor's request runs as one run over a range of tenants), so the spaCy and embedding
models load once for all of them. Which sessions a run consolidates is its configuration
(``ConsolidationScope``), not its partitions: by default every completed session of each tenant
not consolidated yet, so a rerun writes the same rows and a failed run is caught up by the next.
The graph reads the episodes written since it was last built from them (``graph_pending``), so
it too catches up after a failure. Each tenant gets its own figures and checks
(``report_partitions``); a tenant that fails is reported as failed after the others are done.
"""


import time
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from typing import Any

import dagster as dg
from pydantic import Field

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
from memory_pipeline.consolidation.partitions import consolidation_partitions
from memory_pipeline.consolidation.pipeline import build_graph, consolidate_episodes, dedup_entities
from memory_pipeline.consolidation.store import ConsolidationStore
from memory_pipeline.consolidation.supersession import SupersessionReport, supersede_tenant
from memory_pipeline.embedding import EMBEDDER_IDENTITY
from memory_pipeline.episodes.sessions import SessionsRead
from memory_pipeline.llm.client import LLMClient
from memory_pipeline.orchestration import materializations as reporting
from memory_pipeline.orchestration.resources import EmbedderResource, LanceDBResource, WorkspaceResource
from memory_pipeline.orchestration.sources import session_transcripts
from memory_pipeline.orchestration.tenant_keys import require_known_tenants
from memory_pipeline.store.tables import ENTITIES, EPISODES, RELATIONS
from memory_pipeline.tenancy import Tenant
from memory_pipeline.timeline.records import supersession_rows

GROUP = "consolidation"
TAGS = {"layer": "consolidation"}
consolidation_asset = reporting.layer_asset(GROUP, TAGS)
CONSOLIDATION_WRITE_POOL = "consolidation_write"
"""Steps that write the consolidation tables: one at a time, so a tenant's validity intervals and
merges are recomputed over a consistent graph (``dagster.yaml`` pools default to 1)."""
PREVIEW_ROWS = 10
_DIM = EMBEDDER_IDENTITY[get_settings().embedder][1]


class ConsolidationScope(dg.Config):
    """Which completed sessions a consolidation run consolidates, for every tenant it covers
    (the run's configuration of ``episodic_summaries``; the steps after it read what it wrote)."""

    days: list[str] = Field(
        default_factory=list, description="Only sessions completed on these days (YYYY-MM-DD, UTC); empty: any day."
    )
    since: str | None = Field(None, description="Only sessions completed on or after this day (YYYY-MM-DD, UTC).")
    again: bool = Field(
        False, description="Consolidate again the sessions consolidated already (after a change of model or "
        "rules); by default only sessions with no episode yet, or whose transcript grew since.",
    )

    def checked_days(self) -> tuple[set[str], str | None]:
        """(days, since), or ``dg.Failure`` naming the value that is not a day."""
        for name, value in [*(("days", d) for d in self.days), *([("since", self.since)] if self.since else [])]:
            try:
                if len(value) != 10:
                    raise ValueError
                date.fromisoformat(value)
            except ValueError:
                raise dg.Failure(description=f"consolidation config {name}: {value!r} is not a day as YYYY-MM-DD") from None
        return set(self.days), self.since

    def describe(self) -> str:
        which = "every completed session" if self.again else "completed sessions not consolidated yet"
        if self.days:
            which += f" of {', '.join(sorted(self.days)[:5])}" + (f" (+{len(self.days) - 5} days)" if len(self.days) > 5 else "")
        return which + (f", completed since {self.since}" if self.since else "")


def scope_config(days: list[str] | tuple[str, ...] = (), since: str | None = None, again: bool = False) -> dict:
    """The run configuration of a consolidation run with this scope (merged into a job's run config)."""
    config: dict[str, Any] = {"again": again}
    if days:
        config["days"] = sorted(days)
    if since:
        config["since"] = since
    return {"ops": {"episodic_summaries": {"config": config}}}


def check_spec(name: str, asset: str, partitions_def: dg.PartitionsDefinition = consolidation_partitions) -> dg.AssetCheckSpec:
    description, blocking = CHECKS[name]
    return dg.AssetCheckSpec(name, asset=asset, description=description, blocking=blocking, partitions_def=partitions_def)


def _sessions_read(workspace: WorkspaceResource) -> SessionsRead:
    """The sessions this run read: the episodes keep them, the graph reads them after."""
    return workspace.run_memo().setdefault("sessions_read", SessionsRead())


def _store(lancedb: LanceDBResource, embedder: EmbedderResource) -> ConsolidationStore:
    return ConsolidationStore(lancedb.uri, embedder.dim)


def day_span(days: list[str]) -> str:
    """``first..last (n days)`` of the days a tenant's consolidated sessions completed on."""
    if not days:
        return "none"
    first, last = min(days), max(days)
    count = len(set(days))
    return first if count == 1 else f"{first}..{last} ({count} days)"


@consolidation_asset(
    partitions_def=consolidation_partitions,
    pool=CONSOLIDATION_WRITE_POOL,
    kinds={"python", "lancedb"},
    metadata={"dagster/column_schema": reporting.column_schema(EPISODES.name, EPISODES.schema(_DIM))},
    deps=[session_transcripts.key],
    check_specs=[check_spec(EPISODES_CHECK, "episodic_summaries")],
)
def episodic_summaries(
    context: dg.AssetExecutionContext,
    config: ConsolidationScope,
    workspace: WorkspaceResource,
    lancedb: LanceDBResource,
    embedder: EmbedderResource,
):
    """One episode (summary, one-line abstract, key topics, vector) per completed session of the tenant."""
    started = time.perf_counter()
    settings = workspace.settings()
    days, since = config.checked_days()
    store = _store(lancedb, embedder)
    if reporting.checks_only(context):
        yield from reporting.report_stored_checks(context, EPISODES_CHECK, lambda key: check_episodes(store, key))
        return
    llm = LLMClient.from_env()
    now = datetime.now(UTC)
    report = reporting.PartitionReport(context.partition_keys)
    require_known_tenants(workspace.root_path, report.partition_keys, settings.teams)  # before any work: nothing materialized
    context.log.info(f"consolidating {config.describe()} of {len(report.partition_keys)} tenant(s)")
    problems, preview = [], []
    model = None
    for key in report.partition_keys:
        tenant = Tenant.from_key(key)
        try:
            model = model or embedder.get()
            done = consolidate_episodes(
                workspace.root_path, store, tenant, days or None, model, now,
                timedelta(minutes=settings.session_idle_minutes), timedelta(days=settings.episode_ttl_days), llm,
                since=since, only_new=not config.again, read=_sessions_read(workspace),
            )
        except Exception as exc:  # one tenant's failure must not stop the others
            reporting.fail_partition(context, report, key, "not consolidated", exc)
            continue
        context.log.info(
            f"[{key}] {len(done.drafts)} session(s) consolidated, {done.unchanged} unchanged, {done.open} still open"
        )
        problems += [[key, p, "-", why] for p, why in done.unreadable]
        problems += [[key, p, n, why] for p, n, why in done.malformed_lines]
        problems += [[key, "LLM", "-", why] for why in done.llm_failures]
        for p, n, why in done.malformed_lines[:20]:
            context.log.warning(f"[{key}] {p} line {n} skipped: {why}")
        for why in done.llm_failures:
            context.log.warning(f"[{key}] LLM summary failed, extractive used: {why}")
        preview += [
            [d.row["session_id"], d.row["produced_by"], d.row["l0_abstract"], ", ".join(d.row["key_topics"][:5])]
            for d in done.drafts
        ]
        report.add(
            key,
            {
                "sessions_complete": len(done.drafts),
                "sessions_unchanged": done.unchanged,
                "sessions_open": done.open,
                "days": day_span([d.row["day"] for d in done.drafts]),
                "episodes_inserted": done.written["inserted"],
                "episodes_updated": done.written["updated"],
                "episodes_superseded": done.written["superseded"],
                "path_compaction": done.paths["compaction"],
                "path_extractive": done.paths["extractive"],
                "path_llm": done.paths["llm"],
                "secrets_redacted": sum(done.secrets.values()),
                "turns_parsed": done.parsed,
                "turn_parses_read": done.parses_read,
                "dagster/row_count": store.episode_rows(key, columns=["id"]).height,
            },
            {EPISODES_CHECK: check_episodes(store, key)},
        )
    metadata = {
        "scope": config.describe(),
        "llm_configured": llm is not None,
        "fts_covers_every_row": store.ensure_episode_fts(),
        "problems": len(problems),
        "seconds": round(time.perf_counter() - started, 3),
        "problems_detail": dg.MetadataValue.md(reporting.md_table(["tenant", "path", "line", "reason"], problems[:50])),
        "preview": dg.MetadataValue.md(reporting.md_table(["session", "path", "abstract", "topics"], preview[:PREVIEW_ROWS])),
    }
    yield from reporting.report_partitions(context, report, metadata)


@consolidation_asset(
    partitions_def=consolidation_partitions,
    pool=CONSOLIDATION_WRITE_POOL,
    kinds={"python", "spacy", "lancedb"},
    metadata={"dagster/column_schema": reporting.column_schema(RELATIONS.name, RELATIONS.schema(_DIM))},
    deps=[episodic_summaries, session_transcripts.key],
    check_specs=[check_spec(RELATIONS_CHECK, "semantic_graph")],
)
def semantic_graph(
    context: dg.AssetExecutionContext, workspace: WorkspaceResource, lancedb: LanceDBResource, embedder: EmbedderResource
):
    """Entities and time-bounded relations (L2) read from the tenant's episodes written since the
    graph was last built and their turns, and the tenant's statements a later one replaced
    (supersession), recorded once, here."""
    started = time.perf_counter()
    store = _store(lancedb, embedder)
    if reporting.checks_only(context):
        yield from reporting.report_stored_checks(context, RELATIONS_CHECK, lambda key: check_relations(store, key))
        return
    llm = LLMClient.from_env()
    report = reporting.PartitionReport(context.partition_keys)
    nlp_ms = 0
    decided_by: Counter = Counter()
    predicates: Counter = Counter()
    failures, preview, closed, replaced = [], [], [], []
    for key in report.partition_keys:
        tenant = Tenant.from_key(key)
        try:
            built = build_graph(
                workspace.root_path, store, tenant, None, embedder.get(), pending_only=True, read=_sessions_read(workspace)
            )
            # Nothing new to read: the supersession records stand as the run that wrote the last
            # episodes left them (typed memories decide theirs in their own slice).
            timeline = (
                supersede_tenant(workspace.root_path, lancedb.uri, tenant, embedder.get(), datetime.now(UTC), llm=llm)
                if built.episodes else None
            )
            store.mark_graphed(built.episode_ids)  # after supersession: a run failing before it reads them again
        except Exception as exc:
            reporting.fail_partition(context, report, key, "not consolidated", exc)
            continue
        supersessions = len(timeline.records) if timeline else supersession_rows(store.db, key).height
        timeline = timeline or SupersessionReport(key)
        context.log.info(f"[{key}] graph built from {built.episodes} episode(s); {supersessions} supersessions")
        decided_by.update(timeline.decided_by)
        replaced += [[key, r["old_ref"], f"{r['old_said_at']:%Y-%m-%d}", r["new_ref"],
                      f"{r['new_said_at']:%Y-%m-%d}", r["decided_by"]] for r in timeline.records]
        nlp_ms += int(built.nlp_s * 1000)
        predicates.update(built.predicates)
        failures += [[key, f] for f in built.failures]
        for failure in built.failures:
            context.log.warning(f"[{key}] {failure}")
        preview += [
            [r["subject"], r["predicate"], r["object"], f"{r['valid_from']:%Y-%m-%d}" if r["valid_from"] else "", r["rule"]]
            for r in sorted(built.relations, key=lambda r: -r["confidence"])
        ]
        # valid_to is the copy of each relation's supersession record: as the graph left it, then supersession.
        changed = {r["id"]: r for r in [*built.validity_changed, *timeline.relations_changed]}.values()
        closed += [[r["subject"], r["predicate"], r["object"], f"{r['valid_to']:%Y-%m-%d}"] for r in changed if r["valid_to"]]
        report.add(
            key,
            {
                "episodes_read": built.episodes,
                "relations_written": len(built.relations),
                "relations_closed": sum(1 for r in changed if r["valid_to"]),
                "relations_removed": built.relations_removed,
                "entities_new": built.entities_new,
                "supersessions": supersessions,
                "supersessions_added": timeline.added,
                "supersessions_removed": timeline.removed,
                # Statements and relations unchanged since the records were decided: kept as stored.
                "supersessions_kept_undecided": int(timeline.unchanged),
                "secrets_redacted": sum(built.secrets.values()),
                "texts_parsed": built.parsed,
                "parses_read": built.parses_read,
                "dagster/row_count": store.relation_rows(key, columns=["id"]).height,
            },
            {RELATIONS_CHECK: check_relations(store, key)},
        )
    metadata = {
        "extraction_failures": len(failures),
        "supersessions_decided_by": dg.MetadataValue.json(dict(decided_by)),
        "superseded": dg.MetadataValue.md(reporting.md_table(
            ["tenant", "statement", "said", "replaced by", "on", "decided by"], replaced[:PREVIEW_ROWS])),
        "nlp_seconds": round(nlp_ms / 1000, 3),
        "seconds": round(time.perf_counter() - started, 3),
        "predicates": dg.MetadataValue.json(dict(predicates.most_common())),
        "failures": dg.MetadataValue.md(reporting.md_table(["tenant", "failure"], failures[:50])),
        "closed": dg.MetadataValue.md(reporting.md_table(["subject", "predicate", "object", "valid_to"], closed[:PREVIEW_ROWS])),
        "preview": dg.MetadataValue.md(reporting.md_table(["subject", "predicate", "object", "since", "rule"], preview[:PREVIEW_ROWS])),
    }
    yield from reporting.report_partitions(context, report, metadata)


@consolidation_asset(
    partitions_def=consolidation_partitions,
    pool=CONSOLIDATION_WRITE_POOL,
    kinds={"python", "lancedb"},
    metadata={"dagster/column_schema": reporting.column_schema(ENTITIES.name, ENTITIES.schema(_DIM))},
    deps=[semantic_graph],
    check_specs=[check_spec(DEDUP_CHECK, "entity_dedup")],
)
def entity_dedup(context: dg.AssetExecutionContext, lancedb: LanceDBResource, embedder: EmbedderResource):
    """The tenant's entities with duplicates merged, ambiguous pairs flagged and relations re-pointed."""
    started = time.perf_counter()
    store = _store(lancedb, embedder)
    if reporting.checks_only(context):
        yield from reporting.report_stored_checks(context, DEDUP_CHECK, lambda key: check_dedup(store, key))
        return
    now = datetime.now(UTC)
    report = reporting.PartitionReport(context.partition_keys)
    merged, ambiguous = [], []
    for key in report.partition_keys:
        try:
            done = dedup_entities(store, Tenant.from_key(key), now)
        except Exception as exc:
            reporting.fail_partition(context, report, key, "not consolidated", exc)
            continue
        context.log.info(f"[{key}] {len(done.merged)} entities merged, {len(done.ambiguous)} pairs flagged")
        merged += [[done.names[d.from_id], done.names[d.into_id], d.reason, d.score] for d in done.merged]
        ambiguous += [[done.names[d.from_id], done.names[d.into_id], d.reason, d.score] for d in done.ambiguous]
        report.add(
            key,
            {
                "entities_before": done.entities,
                "merged": len(done.merged),
                "ambiguous_flagged": len(done.ambiguous),
                "relations_repointed": done.relations_repointed,
                "dagster/row_count": store.entity_rows(key, columns=["id"]).height,
            },
            {DEDUP_CHECK: check_dedup(store, key)},
        )
    metadata = {
        "seconds": round(time.perf_counter() - started, 3),
        "merges": dg.MetadataValue.md(reporting.md_table(["merged", "into", "reason", "score"], merged[:50])),
        "ambiguous": dg.MetadataValue.md(reporting.md_table(["entity", "maybe", "reason", "score"], ambiguous[:50])),
    }
    yield from reporting.report_partitions(context, report, metadata)


consolidation_assets = [episodic_summaries, semantic_graph, entity_dedup]
consolidation_job = dg.define_asset_job(
    "consolidation_job",
    selection=dg.AssetSelection.assets(*consolidation_assets),
    partitions_def=consolidation_partitions,
    description="Summarize the tenants' completed sessions not consolidated yet into episodes, then the graph "
    "and its deduplication (run configuration: which sessions).",
)
