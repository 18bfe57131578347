"""Consolidation as plain functions, one per asset, called by the assets, the CLI and the bench.

Each takes the workspace root, the store and one tenant, and returns a report the asset turns
into metadata. Nothing here knows about Dagster.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memory_pipeline.consolidation.store import GRAPH_PENDING, ConsolidationStore
from memory_pipeline.embedding import Embedder
from memory_pipeline.episodes.dream_lines import collect_lines
from memory_pipeline.episodes.dreaming import (
    MAX_EPISODES,
    DreamResult,
    HumanFileError,
    dreaming_path,
    llm_lines,
    mark_replaced,
    write_document,
)
from memory_pipeline.episodes.sessions import Session, SessionFile, SessionsRead, load_session, session_files, tenant_sessions
from memory_pipeline.episodes.summaries import EpisodeDraft, attach_vectors, build_episode, last_line, scrubbed_session
from memory_pipeline.knowledge import dedup as dedup_rules
from memory_pipeline.knowledge.graph import graph_rows, resolver
from memory_pipeline.knowledge.relations import extract, parse_utterances, utterances
from memory_pipeline.llm.client import LLMClient, LLMError
from memory_pipeline.store.base import sql_in, stable_id
from memory_pipeline.tenancy import Tenant, tenant_tz
from memory_pipeline.text.statements import load_nlp
from memory_pipeline.timeline import relation_ends
from memory_pipeline.timeline.parse_cache import ParseStore
from memory_pipeline.timeline.records import supersession_rows

log = logging.getLogger(__name__)
PARSE_AHEAD_EPISODES = 16
"""Episodes whose turns the graph parses in one batch (16 sessions of 35 turns: 560 turns)."""


@dataclass
class EpisodesReport:
    drafts: list[EpisodeDraft] = field(default_factory=list)
    complete: int = 0
    open: int = 0
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    malformed_lines: list[tuple[str, int, str]] = field(default_factory=list)
    written: Counter = field(default_factory=Counter)
    paths: Counter = field(default_factory=Counter)
    llm_failures: list[str] = field(default_factory=list)
    secrets: Counter = field(default_factory=Counter)
    embed_s: float = 0.0
    unchanged: int = 0  # complete sessions left alone: consolidated already, transcript unchanged
    parsed: int = 0  # turns spaCy parsed; the others' parses were read back (timeline.parse_cache)
    parses_read: int = 0


def consolidate_episodes(
    root: Path,
    store: ConsolidationStore,
    tenant: Tenant,
    days: set[str] | None,
    embedder: Embedder,
    now: datetime,
    idle: timedelta,
    ttl: timedelta,
    llm: LLMClient | None = None,
    *,
    since: str | None = None,
    only_new: bool = False,
    read: SessionsRead | None = None,
) -> EpisodesReport:
    """Write one episode per session of ``tenant`` completed on one of ``days`` (all days if None)
    and on or after the day ``since``. ``only_new``: only the sessions with no episode yet, or
    whose transcript grew since its episode was written (see ``ConsolidatedSessions``). ``read``
    keeps the sessions read for ``build_graph`` in the same run."""
    report = EpisodesReport()
    known = ConsolidatedSessions.of(store, tenant) if only_new else None
    found = tenant_sessions(root, tenant, now, idle, days, since, skip=known.untouched if known else None)
    complete = [s for s in found.complete if known is None or known.is_new(s)]
    if read is not None:
        read.keep(root, tenant, complete)
    report.complete, report.open, report.unreadable = len(complete), len(found.open), found.unreadable
    report.unchanged = len(found.complete) - len(complete) + (known.skipped if known else 0)
    kept = ParseStore(store.uri)
    nlp = kept.parser(tenant.key, load_nlp(), keep=True) if complete else None
    for session in complete:
        report.malformed_lines += [(session.file.path, n, why) for n, why in session.transcript.skipped]
        draft = build_episode(session, tenant.key, now, ttl, embedder.name, llm, nlp)
        if draft is None:
            continue
        report.drafts.append(draft)
        report.paths[draft.row["produced_by"]] += 1
        report.secrets.update(draft.secrets)
        if draft.llm_error:
            report.llm_failures.append(f"{session.file.path}: {draft.llm_error}")
    if nlp is not None:
        kept.add(tenant.key, nlp)  # the turns' parses, for the graph, supersession and dreaming
        report.parsed, report.parses_read = nlp.parsed, nlp.read_back
    if report.drafts:
        started = time.perf_counter()
        vectors = embedder.embed([d.embed_text for d in report.drafts])
        report.embed_s = time.perf_counter() - started
        report.written.update(store.upsert_episodes(attach_vectors(report.drafts, vectors)))
    return report


@dataclass
class ConsolidatedSessions:
    """What the tenant's stored episodes say about its sessions: the last line each version of a
    session covers (by ``source_id``: session and compaction count) and when each transcript was
    first consolidated. A session is new when no episode has its ``source_id`` or its transcript
    has lines past the episode's (a compaction makes a new ``source_id``). A transcript not written
    since its episode was is not read at all (``untouched``), so a run over a long history reads
    only what moved; one written since is read again each time, and consolidated only if it grew.
    """

    last_lines: dict[str, int]
    written_at: dict[str, datetime]
    skipped: int = 0

    @classmethod
    def of(cls, store: ConsolidationStore, tenant: Tenant) -> ConsolidatedSessions:
        rows = store.episode_rows(tenant.key, columns=["path", "source_id", "end_line", "created_at"])
        written: dict[str, datetime] = {}
        for path, at in zip(rows["path"].to_list(), rows["created_at"].to_list(), strict=True):
            written[path] = min(at, written.get(path, at))
        return cls(dict(zip(rows["source_id"].to_list(), rows["end_line"].to_list(), strict=True)), written)

    def untouched(self, file: SessionFile) -> bool:
        at = self.written_at.get(file.path)
        if at is None or file.modified_at > at:
            return False
        self.skipped += 1
        return True

    def is_new(self, session: Session) -> bool:
        return self.last_lines.get(session.source_id) != last_line(session)


@dataclass
class GraphReport:
    episodes: int = 0
    entities_new: int = 0
    entities_touched: int = 0
    relations: list[dict] = field(default_factory=list)
    relations_removed: int = 0
    validity_changed: list[dict] = field(default_factory=list)
    predicates: Counter = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    nlp_s: float = 0.0
    secrets: Counter = field(default_factory=Counter)
    episode_ids: list[str] = field(default_factory=list)
    parsed: int = 0  # texts spaCy parsed (captions, mostly); the others' parses were read back
    parses_read: int = 0


def _episode_session(
    root: Path, episode: dict, files: dict[str, SessionFile], read: dict[str, Session]
) -> Session | str | Exception:
    file = files.get(episode["path"])
    if file is None:
        return "transcript no longer exists"
    known = read.get(file.path)
    if known is not None and known.file.fingerprint == file.fingerprint:
        return known  # the file has the size and mtime it had when it was read: the same turns
    try:
        # The episode says the session is complete; completion is not re-decided here.
        return load_session(root, file, datetime.max.replace(tzinfo=episode["completed_at"].tzinfo), timedelta(0))
    except Exception as exc:  # noqa: BLE001 - raised again in the episode's own extraction
        return exc


def _scrubbed(session: Session | str | Exception):
    """(turns, compactions, secrets) of a session read, or why it could not be (a str or an error)."""
    if not isinstance(session, Session):
        return session
    try:
        return scrubbed_session(session)
    except Exception as exc:  # noqa: BLE001 - raised again in the episode's own extraction
        return exc


def _parse_ahead(sessions: list, tenant: Tenant, nlp) -> None:
    """Parse the turns of every episode in one batch (each episode's ``extract`` then reads the
    parses from the memo): 70 calls of a few uncached turns each cost a third more."""
    items = [u for s in sessions if isinstance(s, tuple) for u in utterances(*s[:2], tenant.user_id)]
    try:
        parse_utterances(items, nlp)
    except Exception as exc:  # noqa: BLE001 - each episode parses again and records its own failure
        log.warning("parsing %s's turns ahead failed (%s: %s)", tenant.key, type(exc).__name__, exc)


def build_graph(
    root: Path, store: ConsolidationStore, tenant: Tenant, days: set[str] | None, embedder: Embedder, nlp=None,
    *, pending_only: bool = False, read: SessionsRead | None = None,
) -> GraphReport:
    """Entities and relations of the tenant's episodes of ``days`` (every day if None), or only of
    those written since the graph was last built from them (``pending_only``); when each relation
    ends is recorded after (timeline/relation_ends.py), again by ``supersede_tenant`` with
    fresh statement decisions. The caller marks the episodes read (``episode_ids``) graphed once
    supersession is done too; their extraction failures are reported here, not retried."""
    report = GraphReport()
    where = " AND ".join(filter(None, [sql_in("day", sorted(days)) if days else None, GRAPH_PENDING if pending_only else None]))
    episodes = store.episode_rows(tenant.key, where or None)
    if episodes.height == 0:
        return report
    existing = {r["id"]: r for r in store.entity_rows(tenant.key).iter_rows(named=True)}
    resolve = resolver(store.merge_rows(tenant.key).iter_rows(named=True))
    tz = tenant_tz(root, tenant)
    touched: dict[str, dict] = {}
    relations: list[dict] = []
    files = {f.path: f for f in session_files(root, tenant)}  # listed once: a scan per episode is quadratic
    ordered = list(episodes.sort("completed_at").iter_rows(named=True))
    remembered = read.of(root, tenant) if read is not None else {}
    # Read and scrubbed once each; a failure stays its episode's.
    sessions = [_scrubbed(_episode_session(root, episode, files, remembered)) for episode in ordered]
    # The turns' words as their summaries parsed them, read back (a caption is parsed here).
    nlp = ParseStore(store.uri).parser(tenant.key, nlp or load_nlp(), keep=False)
    ahead = 0
    for n, (episode, session) in enumerate(zip(ordered, sessions, strict=True)):
        if n == ahead:
            # The next episodes' turns parsed in one batch, a few hundred turns at a time: all of a
            # big tenant's at once were held together and outgrew the parse memo, so each
            # episode parsed its turns a second time.
            ahead = n + PARSE_AHEAD_EPISODES
            started = time.perf_counter()
            _parse_ahead(sessions[n:ahead], tenant, nlp)
            report.nlp_s += time.perf_counter() - started
        report.episodes += 1
        try:
            if isinstance(session, Exception):
                raise session
            if isinstance(session, str):
                raise RuntimeError(session)
            turns, compactions, secrets = session
            report.secrets.update(secrets)
            started = time.perf_counter()
            extraction = extract(utterances(turns, compactions, tenant.user_id), nlp=nlp)
            report.nlp_s += time.perf_counter() - started
            report.failures += [f"{episode['path']} {f}" for f in extraction.failures]
            entities, rels = graph_rows(tenant.key, episode, extraction, {**existing, **touched}, resolve, tz)
        except Exception as exc:  # an extraction failure never blocks the other episodes
            message = f"{episode['path']}: extraction failed ({type(exc).__name__}: {exc})"
            log.warning(message)
            report.failures.append(message)
            continue
        touched.update(entities)
        relations += rels
    report.parsed, report.parses_read = nlp.parsed, nlp.read_back
    new = [row for eid, row in touched.items() if eid not in existing]
    report.entities_new, report.entities_touched = len(new), len(touched)
    need_vectors = [row for row in touched.values() if row["vector"] is None]
    if need_vectors:
        vectors = embedder.embed([row["name"] for row in need_vectors])
        for row, vector in zip(need_vectors, vectors, strict=True):
            row["vector"] = vector.tolist()
    store.upsert_entities(list(touched.values()))
    # Relations an earlier version of these episodes had but this one does not are dropped.
    episode_ids = episodes["id"].to_list()
    before = store.relation_rows(tenant.key, sql_in("source_episode", episode_ids))
    fresh_ids = {r["id"] for r in relations}
    stale = [i for i in (before["id"].to_list() if before.height else []) if i not in fresh_ids]
    kept_valid_to = {r["id"]: r["valid_to"] for r in before.iter_rows(named=True)} if before.height else {}
    for row in relations:
        row["valid_to"] = kept_valid_to.get(row["id"])  # the copy of its record, rewritten by supersession
    store.upsert_relations(relations)
    if stale:
        store.delete_relations(stale)
    report.relations, report.relations_removed = relations, len(stale)
    report.predicates.update(r["predicate"] for r in relations)
    report.validity_changed = relation_ends.refresh(store.uri, tenant.key, datetime.now(UTC))
    report.episode_ids = episode_ids
    return report


@dataclass
class DedupReport:
    entities: int = 0
    merged: list[dedup_rules.Decision] = field(default_factory=list)
    ambiguous: list[dedup_rules.Decision] = field(default_factory=list)
    relations_repointed: int = 0
    names: dict[str, str] = field(default_factory=dict)


def dedup_entities(store: ConsolidationStore, tenant: Tenant, now: datetime) -> DedupReport:
    """Merge equivalent entities of a tenant, flag ambiguous pairs, re-point relations."""
    report = DedupReport()
    entities = {r["id"]: r for r in store.entity_rows(tenant.key).iter_rows(named=True)}
    report.entities = len(entities)
    report.names = {eid: row["name"] for eid, row in entities.items()}
    decisions = dedup_rules.plan_merges(list(entities.values()))
    known = set(store.merge_rows(tenant.key)["id"].to_list())
    history, merged_into = [], {}
    for d in decisions:
        mid = stable_id("merge", tenant.key, d.from_id, d.into_id)
        if d.status == dedup_rules.MERGED:
            report.merged.append(d)
            merged_into[d.from_id] = d.into_id
        elif mid in known:
            continue  # flagged before: the flag stands, unchanged
        else:
            report.ambiguous.append(d)
        history.append({
            "id": mid, "tenant": tenant.key, "from_id": d.from_id, "from_name": entities[d.from_id]["name"],
            "into_id": d.into_id, "into_name": entities[d.into_id]["name"], "status": d.status,
            "reason": d.reason, "score": d.score, "decided_at": now,
        })
    if not history:
        return report
    if merged_into:
        for gone_id, kept_id in merged_into.items():
            gone, kept = entities[gone_id], entities[kept_id]
            names = {gone["name"], *(gone["aliases"] or []), *(kept["aliases"] or [])} - {kept["name"]}
            kept["aliases"] = sorted(names)
            kept["episode_ids"] = sorted({*(kept["episode_ids"] or []), *(gone["episode_ids"] or [])})
            kept["first_seen"] = min(filter(None, [kept["first_seen"], gone["first_seen"]]), default=None)
            kept["last_seen"] = max(filter(None, [kept["last_seen"], gone["last_seen"]]), default=None)
        store.upsert_entities([entities[k] for k in set(merged_into.values())])
        relations = store.relation_rows(
            tenant.key, f"{sql_in('subject_id', merged_into)} OR {sql_in('object_id', merged_into)}"
        )
        repointed = []
        for row in relations.iter_rows(named=True):
            row["subject_id"] = merged_into.get(row["subject_id"], row["subject_id"])
            if row["object_id"]:
                row["object_id"] = merged_into.get(row["object_id"], row["object_id"])
            repointed.append(row)
        store.upsert_relations(repointed)
        report.relations_repointed = len(repointed)
    store.upsert_merges(history)  # history first: a crash after it still resolves old names
    store.delete_entities(merged_into)
    relation_ends.refresh(store.uri, tenant.key, now)  # merged subjects: one graph rule over their relations
    return report


@dataclass
class DreamReport:
    episodes: list[dict] = field(default_factory=list)
    result: DreamResult | None = None
    produced_by: str = "extractive"
    llm_error: str | None = None
    problems: list[str] = field(default_factory=list)
    refused: str | None = None


def dream(
    root: Path, store: ConsolidationStore, tenant: Tenant, now: datetime, llm: LLMClient | None = None,
    limit: int = MAX_EPISODES,
) -> DreamReport:
    """Promote the tenant's oldest unpromoted episodes (at most ``limit``) into the day's file."""
    report = DreamReport()
    pending = store.episode_rows(tenant.key, "promoted_at IS NULL")
    if pending.height == 0:
        return report
    episodes = list(pending.sort(["completed_at", "id"]).head(limit).iter_rows(named=True))
    report.episodes = episodes
    ids = [e["id"] for e in episodes]
    relations = list(store.relation_rows(tenant.key, sql_in("source_episode", ids)).iter_rows(named=True))
    entities = list(store.entity_rows(tenant.key).iter_rows(named=True))
    names = {r["id"]: r["name"] for r in entities}
    everything = list(store.relation_rows(tenant.key).iter_rows(named=True))
    for rel in [*relations, *everything]:  # show the entity's name ("Alice"), not the words of the turn ("alice")
        rel["subject"] = names.get(rel["subject_id"], rel["subject"])
        rel["object"] = names.get(rel["object_id"], rel["object"]) if rel["object_id"] else rel["object"]
    # What a later statement replaced (a moved plan, an old manager) is not promoted as current.
    records = supersession_rows(store.db, tenant.key)
    replaced = set(records["old_ref"].to_list())
    memories = store.typed_memory_rows(tenant.key, "memory_type IN ('preference', 'decision')")
    lines, report.problems = collect_lines(
        root, episodes, relations, user_name=tenant.user_id,
        memories=[m for m in memories.iter_rows(named=True) if f"facts/{m['id']}" not in replaced],
        all_relations=everything, all_episodes=list(store.episode_rows(tenant.key).iter_rows(named=True)),
        entities=entities, superseded=replaced, nlp=ParseStore(store.uri).parser(tenant.key, load_nlp(), keep=False),
    )
    if llm is not None and llm.available:
        try:
            lines = llm_lines(llm, lines)
            report.produced_by = "llm"
        except LLMError as exc:
            report.llm_error = str(exc)
    path = dreaming_path(root, tenant, now)
    try:
        report.result = write_document(path, tenant, now, lines, report.produced_by)
        # A graph fact's line cites a turn a later one replaced (a residence, with its end date):
        # marked as consolidation marks it (``consolidation.supersession``), so a rerun changes nothing.
        mark_replaced(path, {r["old_ref"]: f"{r['new_said_at']:%Y-%m-%d}" for r in records.iter_rows(named=True)
                             if "#L" in r["old_ref"]})
    except HumanFileError:
        # Named relative to the workspace: the reason reaches run metadata and logs.
        report.refused = (
            f"{path.relative_to(root).as_posix()} exists and was not written by dreaming (no marker line); "
            "left untouched"
        )
        return report
    store.mark_promoted(ids, now)
    return report
