"""Sensors of consolidation: sessions that completed, and tenants with episodes to dream about.

``consolidation_sensor`` stats the transcripts every tick and reads only those whose size or
modification time moved; a session still open is remembered with its last activity, so its idle
timeout is noticed on a later tick without reading it again. The tenants with newly completed
sessions are consolidated in as few runs as Dagster allows (``plan_runs``): a run covers a range
of the session-tenant partitions, so neighbouring tenants share one run, and at most
``MAX_RUNS_PER_TICK`` runs are requested when the tenants between them can be covered too. Each
run consolidates the sessions not consolidated yet, completed since the earliest newly completed
one (``ConsolidationScope.since``): the models load and supersession runs once per tenant. The
run key names the tenants and every due session's fingerprint, so a repeated tick asks for the
same run and a new session asks for a new one. The cursor only remembers transcripts written in
the last 14 days, so it stays small however long the history.

``dreaming_sensor`` counts unpromoted episodes per tenant (one two-column scan) and requests a
dreaming run for a tenant with at least 5, at most once per 10 minutes per tenant: its cursor
holds the time of each tenant's last request.
"""

from __future__ import annotations

import hashlib
import time
from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg

from memory_pipeline.consolidation.assets import consolidation_job, scope_config
from memory_pipeline.consolidation.notes_assets import compaction_flush, compaction_flush_job, dreaming_job
from memory_pipeline.consolidation.store import ConsolidationStore
from memory_pipeline.episodes.dream_rules import plan_dreaming
from memory_pipeline.episodes.live_flush import FlushThresholds, plan_flushes
from memory_pipeline.episodes.sessions import SessionFile, as_session_files, load_session
from memory_pipeline.orchestration.partitions import SESSION_TENANTS_PARTITION, session_tenant_partitions
from memory_pipeline.orchestration.resources import EmbedderResource, LanceDBResource, WorkspaceResource
from memory_pipeline.orchestration.sensor_ticks import pipeline_sensor, read_cursor, tagged_run_request, tick_result
from memory_pipeline.sources.workspace import scan_workspace
from memory_pipeline.tenancy import Tenant

MAX_RUNS_PER_TICK = 3
"""Consolidation runs one tick requests when tenants with nothing due can join them: each run is a
process that loads the models (about 10 s), a tenant with nothing new costs its stat and a few
events, so neighbouring stretches are joined over the narrowest gaps first."""
MAX_READS_PER_TICK = 2000  # transcripts parsed per tick; the rest wait for the next tick
CURSOR_HORIZON = timedelta(days=14)
"""Transcripts untouched for longer leave the cursor once done, so it stays small on a deployment
with years of sessions; sessions older than this on a fresh deployment are backfilled, not sensed."""
DONE = "done"
OPEN = "open"


def utcnow() -> datetime:
    return datetime.now(UTC)


def all_session_files(root: Path) -> list[SessionFile]:
    """Every transcript ``<agent>/sessions/<user>/*.jsonl`` under the root (stat only), as the one
    workspace scanner lists them (invalid or secret-bearing folder names are skipped there)."""
    scan = scan_workspace(root)
    return [f for tenant in scan.tenants for f in as_session_files(scan.files[tenant])]


def plan_consolidation(
    root: Path, cursor: dict, now: datetime, idle: timedelta, horizon: timedelta | None = CURSOR_HORIZON
) -> tuple[dict[tuple[str, str], list[str]], dict, list[str]]:
    """What one tick asks for: ({(day, tenant): [session paths]}, new cursor, notes).

    ``horizon=None`` considers every transcript however old (the CLI's one-off consolidation).
    """
    seen = cursor.get("sessions", {})
    new: dict[str, list] = {}
    due: dict[tuple[str, str], list[str]] = defaultdict(list)
    notes: list[str] = []
    reads = 0
    today = now.date().isoformat()
    oldest = now - horizon if horizon is not None else None
    for file in all_session_files(root):
        previous = seen.get(file.path)
        if oldest is not None and file.modified_at < oldest and (previous is None or previous[1] == DONE):
            continue  # history: consolidated already, or a backfill's job; the cursor forgets it
        if previous and previous[0] == file.fingerprint:
            state, value = previous[1], previous[2]
            if state == DONE or value is None or now - datetime.fromisoformat(value) < idle:
                new[file.path] = previous
                continue
            day = datetime.fromisoformat(value).date().isoformat()  # went idle since the last tick
        else:
            if reads >= MAX_READS_PER_TICK:
                if previous:
                    new[file.path] = previous
                continue
            reads += 1
            session = load_session(root, file, now, idle)
            if isinstance(session, str):
                notes.append(f"{file.path}: {session}")
                continue
            if not session.is_complete:
                last = session.transcript.last_activity or file.modified_at
                new[file.path] = [file.fingerprint, OPEN, last.isoformat()]
                continue
            day = session.day
        if day > today:
            notes.append(f"{file.path}: completed on {day}, after today ({today}): a clock is wrong")
            new[file.path] = [file.fingerprint, DONE, day]
            continue
        new[file.path] = [file.fingerprint, DONE, day]
        due[(day, file.tenant.key)].append(file.path)
    return dict(due), {"sessions": new}, notes


@dataclass(frozen=True)
class ConsolidationRun:
    """One consolidation run: the session-tenant partitions from its first tenant to its last."""

    tenants: tuple[str, ...]

    @property
    def partition_key(self) -> str | None:
        """The one partition of a run of one tenant (the run a person launches from the UI)."""
        return self.tenants[0] if len(self.tenants) == 1 else None

    @property
    def partition_range(self) -> tuple[str, str] | None:
        return (self.tenants[0], self.tenants[-1]) if len(self.tenants) > 1 else None

    @property
    def label(self) -> str:
        if len(self.tenants) == 1:
            return self.tenants[0]
        return f"{self.tenants[0]}..{self.tenants[-1]} ({len(self.tenants)} tenants)"


def plan_runs(
    due: Iterable[str], registered: Sequence[str], bridgeable: Collection[str] = (), max_runs: int | None = None
) -> list[ConsolidationRun]:
    """The runs that consolidate the tenants ``due``: one per stretch of neighbours among the
    ``registered`` partitions, in the instance's order (Dagster runs a range of a dynamic
    partition set, not a set of keys; every due tenant must be registered).

    With ``max_runs``, two stretches separated only by tenants of ``bridgeable`` (tenants of the
    workspace with nothing due: a run over them consolidates nothing of theirs) are joined, the
    narrowest gap first, until at most ``max_runs`` remain. A tenant that is not bridgeable (its
    folder is gone: a run over it fails before any work) always splits.
    """
    index = {key: i for i, key in enumerate(registered)}
    missing = sorted(set(due) - index.keys())
    if missing:
        raise ValueError(f"tenants not registered as session-tenant partitions: {missing[:5]}")
    stretches: list[list[int]] = []
    for i in sorted({index[key] for key in due}):
        if stretches and stretches[-1][1] == i - 1:
            stretches[-1][1] = i
        else:
            stretches.append([i, i])
    allowed = set(bridgeable)
    while max_runs is not None and len(stretches) > max_runs:
        gaps = [
            (stretches[n + 1][0] - stretches[n][1], n)
            for n in range(len(stretches) - 1)
            if all(key in allowed for key in registered[stretches[n][1] + 1 : stretches[n + 1][0]])
        ]
        if not gaps:
            break
        _, n = min(gaps)
        stretches[n : n + 2] = [[stretches[n][0], stretches[n + 1][1]]]
    return [ConsolidationRun(tuple(registered[first : last + 1])) for first, last in stretches]


@pipeline_sensor(consolidation_job, 60)
def consolidation_sensor(context: dg.SensorEvaluationContext, workspace: WorkspaceResource) -> dg.SensorResult:
    """Requests consolidation of the tenants with newly completed sessions: as few runs as the
    session-tenant partitions allow (a run covers a range of them), at most 3 when they can be joined."""
    started = time.perf_counter()
    settings = workspace.settings()
    due, new_cursor, notes = plan_consolidation(
        workspace.root_path, read_cursor(context), utcnow(), timedelta(minutes=settings.session_idle_minutes)
    )
    for note in notes[:20]:
        context.log.warning(note)
    # Only tenants with transcripts are consolidation partitions (paths are <agent>/sessions/<user>/...).
    with_sessions = {tenant for _, tenant in due} | {_tenant_of(path) for path in new_cursor["sessions"]}
    known = context.instance.get_dynamic_partitions(SESSION_TENANTS_PARTITION)
    registered = [*known, *sorted(with_sessions - set(known))]  # the order tick_result registers them in
    requests = []
    by_tenant: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for (day, tenant), paths in due.items():
        by_tenant[tenant] += [(day, p) for p in paths]
    for run in plan_runs(by_tenant, registered, bridgeable=with_sessions, max_runs=MAX_RUNS_PER_TICK):
        items = sorted(item for tenant in run.tenants for item in by_tenant.get(tenant, []))
        digest = hashlib.blake2b(
            "\n".join(f"{p}:{new_cursor['sessions'][p][0]}" for _, p in items).encode(), digest_size=8
        ).hexdigest()
        request = tagged_run_request(
            run.partition_key,
            f"consolidate:{run.label}:{digest}",
            trigger="consolidation_sensor",
            partition_range=run.partition_range,
            sessions=len(items),
            tenants=len(run.tenants),
        )
        requests.append(request.with_replaced_attrs(run_config=scope_config(since=items[0][0])))
    tracked = len(new_cursor["sessions"])
    context.log.info(f"checked {tracked} transcripts in {time.perf_counter() - started:.2f}s")
    return tick_result(
        context,
        requests,
        new_cursor,
        skip_reason=f"no newly completed session among {tracked} transcripts",
        tenants=with_sessions,
        partitions=session_tenant_partitions,
    )


def _tenant_of(path: str) -> str:
    agent, _, user = path.split("/")[:3]
    return Tenant(agent, user).key


@pipeline_sensor(dreaming_job, 60)
def dreaming_sensor(
    context: dg.SensorEvaluationContext, lancedb: LanceDBResource, embedder: EmbedderResource
) -> dg.SensorResult:
    """Requests dreaming for a tenant with >= 5 unpromoted episodes, at most once per 10 minutes per tenant."""
    now = utcnow()
    counts = ConsolidationStore(lancedb.uri, embedder.dim).unpromoted_counts()
    due, new_cursor, waiting = plan_dreaming(counts, read_cursor(context), now)
    requests = [
        tagged_run_request(
            tenant, f"dream:{tenant}:{int(now.timestamp())}", trigger="dreaming_sensor", unpromoted=counts[tenant]
        )
        for tenant in due
    ]
    reason = "; ".join(f"{t}: {why}" for t, why in waiting.items()) or "no unpromoted episodes"
    return tick_result(
        context, requests, new_cursor, skip_reason=reason[:1000], tenants=due, partitions=session_tenant_partitions
    )


@pipeline_sensor(compaction_flush_job, 60)
def flush_sensor(context: dg.SensorEvaluationContext, workspace: WorkspaceResource) -> dg.SensorResult:
    """Requests a compaction flush for a live session past 50 messages or 85% of the context
    (MEMORY_PIPELINE_FLUSH_*), once per threshold crossing."""
    settings = workspace.settings()
    root = workspace.root_path
    due, new_cursor, notes = plan_flushes(
        root, all_session_files(root), read_cursor(context), utcnow(),
        timedelta(minutes=settings.session_idle_minutes), FlushThresholds.from_settings(settings),
    )
    for note in notes[:20]:
        context.log.warning(note)
    by_tenant: dict[str, list] = defaultdict(list)
    for item in due:
        by_tenant[item.tenant].append(item)
    requests = []
    for tenant, items in sorted(by_tenant.items()):
        sessions = [{"path": i.path, "start": i.start, "end": i.end} for i in items]
        request = tagged_run_request(
            tenant,
            "flush:" + ";".join(f"{i.path}:{i.compactions}:{i.crossing}" for i in items),
            trigger="flush_sensor",
            sessions=len(items),
            messages=sum(i.messages for i in items),
        )
        requests.append(request.with_replaced_attrs(
            run_config={"ops": {compaction_flush.op.name: {"config": {"sessions": sessions}}}}
        ))
    return tick_result(
        context, requests, new_cursor,
        skip_reason=f"no live session past a flush threshold among {len(new_cursor['live'])} live transcripts",
        tenants=by_tenant, partitions=session_tenant_partitions,
    )
