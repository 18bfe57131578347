"""Sensors of consolidation: sessions that completed, and tenants with episodes to dream about.

``consolidation_sensor`` stats the transcripts every tick and reads only those whose size or
modification time moved; a session still open is remembered with its last activity, so its idle
timeout is noticed on a later tick without reading it again. It requests one run per tenant over
the partitions (day of completion, tenant) of its newly completed sessions, from the first due day
to the last (``plan_runs``): the run loads the models and decides supersession once for all of
them. The run key names the tenant, the days and every due session's fingerprint, so a repeated
tick asks for the same run and a new session on a consolidated day asks for a new one. The cursor
only remembers transcripts written in the last 14 days, so it stays small however long the history.

``dreaming_sensor`` counts unpromoted episodes per tenant (one two-column scan) and requests a
dreaming run for a tenant with at least 5, at most once per 10 minutes per tenant: its cursor
holds the time of each tenant's last request.
"""

from __future__ import annotations

import hashlib
import time
from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg

from memory_pipeline.consolidation.assets import consolidation_job
from memory_pipeline.consolidation.dreaming import THRESHOLD
from memory_pipeline.consolidation.live_flush import FlushThresholds, plan_flushes
from memory_pipeline.consolidation.notes_assets import compaction_flush, compaction_flush_job, dreaming_job
from memory_pipeline.consolidation.partitions import FIRST_DAY, consolidation_key
from memory_pipeline.consolidation.sessions import SessionFile, as_session_files, load_session
from memory_pipeline.consolidation.store import ConsolidationStore
from memory_pipeline.orchestration.partitions import session_tenant_partitions
from memory_pipeline.orchestration.resources import EmbedderResource, LanceDBResource, WorkspaceResource
from memory_pipeline.orchestration.sensor_ticks import pipeline_sensor, read_cursor, tagged_run_request, tick_result
from memory_pipeline.sources.workspace import scan_workspace
from memory_pipeline.tenancy import Tenant

DREAM_DEBOUNCE = timedelta(minutes=10)
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
        if day < FIRST_DAY or day > today:
            notes.append(f"{file.path}: completed on {day}, outside the day partitions ({FIRST_DAY} to {today})")
            new[file.path] = [file.fingerprint, DONE, day]
            continue
        new[file.path] = [file.fingerprint, DONE, day]
        due[(day, file.tenant.key)].append(file.path)
    return dict(due), {"sessions": new}, notes


@dataclass(frozen=True)
class ConsolidationRun:
    """One consolidation run: a tenant's due days, covered by the partitions from the first to the last."""

    tenant: str
    days: tuple[str, ...]

    @property
    def partition_key(self) -> dg.MultiPartitionKey | None:
        """The one partition of a run of one day (the run a person launches from the UI)."""
        return consolidation_key(self.days[0], self.tenant) if len(self.days) == 1 else None

    @property
    def partition_range(self) -> tuple[dg.MultiPartitionKey, dg.MultiPartitionKey] | None:
        if len(self.days) == 1:
            return None
        return consolidation_key(self.days[0], self.tenant), consolidation_key(self.days[-1], self.tenant)

    @property
    def label(self) -> str:
        return f"{self.days[0]}|{self.tenant}" if len(self.days) == 1 else f"{self.days[0]}..{self.days[-1]}|{self.tenant}"


def plan_runs(due: Iterable[tuple[str, str]], held: Iterable[tuple[str, str]] = ()) -> list[ConsolidationRun]:
    """The runs that consolidate the (day, tenant) partitions ``due``: one per tenant, in day order.

    A run covers the range of partitions from the tenant's first due day to its last (Dagster runs
    a range, not a set), so the days between them with no session are materialized too, with no
    figures of their own: nothing to read, idempotent. A day of ``held`` (it holds completed sessions but is
    not due: consolidated already, or not asked for) splits the range instead, since covering it
    would consolidate its sessions again for nothing.
    """
    days: dict[str, set[str]] = defaultdict(set)
    for day, tenant in due:
        days[tenant].add(day)
    stops: dict[str, set[str]] = defaultdict(set)
    for day, tenant in held:
        stops[tenant].add(day)
    runs = []
    for tenant in sorted(days):
        blockers = sorted(stops[tenant] - days[tenant])
        group: list[str] = []
        for day in sorted(days[tenant]):
            if group and bisect_right(blockers, group[-1]) < bisect_left(blockers, day):
                runs.append(ConsolidationRun(tenant, tuple(group)))
                group = []
            group.append(day)
        runs.append(ConsolidationRun(tenant, tuple(group)))
    return runs


def consolidated_days(cursor: dict) -> set[tuple[str, str]]:
    """(day, tenant) of every completed session the cursor remembers."""
    return {(value, _tenant_of(path)) for path, (_, state, value) in cursor.get("sessions", {}).items() if state == DONE}


@pipeline_sensor(
    consolidation_job, 60,
    "Requests one consolidation run per tenant over the days (partitions day x tenant) of its newly "
    "completed sessions.",
)
def consolidation_sensor(context: dg.SensorEvaluationContext, workspace: WorkspaceResource) -> dg.SensorResult:
    started = time.perf_counter()
    settings = workspace.settings()
    due, new_cursor, notes = plan_consolidation(
        workspace.root_path, read_cursor(context), utcnow(), timedelta(minutes=settings.session_idle_minutes)
    )
    for note in notes[:20]:
        context.log.warning(note)
    requests = []
    for run in plan_runs(due, held=consolidated_days(new_cursor)):
        paths = sorted(p for day in run.days for p in due[(day, run.tenant)])
        digest = hashlib.blake2b(
            "\n".join(f"{p}:{new_cursor['sessions'][p][0]}" for p in paths).encode(), digest_size=8
        ).hexdigest()
        requests.append(
            tagged_run_request(
                run.partition_key,
                f"consolidate:{run.label}:{digest}",
                trigger="consolidation_sensor",
                partition_range=run.partition_range,
                sessions=len(paths),
                due_days=len(run.days),
            )
        )
    tracked = len(new_cursor["sessions"])
    context.log.info(f"checked {tracked} transcripts in {time.perf_counter() - started:.2f}s")
    # Only tenants with transcripts are consolidation partitions (paths are <agent>/sessions/<user>/...).
    with_sessions = {tenant for _, tenant in due} | {_tenant_of(path) for path in new_cursor["sessions"]}
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


def plan_dreaming(
    counts: dict[str, int], cursor: dict[str, float], now: datetime, threshold: int = THRESHOLD
) -> tuple[list[str], dict[str, float], dict[str, str]]:
    """(tenants to dream now, new cursor, why each other tenant with episodes waits)."""
    due, waiting = [], {}
    new_cursor = dict(cursor)
    stamp = now.timestamp()
    for tenant, count in sorted(counts.items()):
        if count < threshold:
            waiting[tenant] = f"{count} unpromoted episodes, fewer than {threshold}"
            continue
        last = cursor.get(tenant)
        if last is not None and stamp - last < DREAM_DEBOUNCE.total_seconds():
            waiting[tenant] = f"requested {int(stamp - last)} s ago, debounced for {int(DREAM_DEBOUNCE.total_seconds())} s"
            continue
        due.append(tenant)
        new_cursor[tenant] = stamp
    return due, new_cursor, waiting


@pipeline_sensor(
    dreaming_job, 60,
    "Requests dreaming for a tenant with >= 5 unpromoted episodes, at most once per 10 minutes per tenant.",
)
def dreaming_sensor(
    context: dg.SensorEvaluationContext, lancedb: LanceDBResource, embedder: EmbedderResource
) -> dg.SensorResult:
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


@pipeline_sensor(
    compaction_flush_job, 60,
    "Requests a compaction flush for a live session past 50 messages or 85% of the context "
    "(MEMORY_PIPELINE_FLUSH_*), once per threshold crossing.",
)
def flush_sensor(context: dg.SensorEvaluationContext, workspace: WorkspaceResource) -> dg.SensorResult:
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
