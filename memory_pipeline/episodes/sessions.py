"""Which session transcripts are complete, and on which day (UTC) they completed.

A transcript is complete when it holds a ``session.completed`` line, or when nothing was written
to it for the idle timeout (``MEMORY_PIPELINE_SESSION_IDLE_MINUTES``, 30 by default). An idle
session completes at its last activity: the latest timestamp in it, or the file's modification
time when no line carries one. A later line reopens nothing: the session is consolidated again
with a new ``source_id`` only if a compaction was added.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memory_pipeline.sources.transcripts import Transcript, read_transcript
from memory_pipeline.sources.workspace import KIND_SESSIONS, WorkspaceFile, scan_workspace
from memory_pipeline.tenancy import Tenant

COMPLETED_BY_MARKER = "marker"
COMPLETED_BY_IDLE = "idle"


@dataclass(frozen=True)
class SessionFile:
    """One transcript of a tenant, as seen by a stat."""

    tenant: Tenant
    path: str  # relative to the workspace root, POSIX
    session_id: str
    size: int
    mtime_ns: int

    @property
    def key(self) -> str:
        """A session's identity across runs: ``<agent>/<user>/<session_id>``."""
        return f"{self.tenant.agent_id}/{self.tenant.user_id}/{self.session_id}"

    @property
    def fingerprint(self) -> str:
        return f"{self.size}:{self.mtime_ns}"

    @property
    def modified_at(self) -> datetime:
        return datetime.fromtimestamp(self.mtime_ns / 1e9, tz=UTC)


@dataclass(frozen=True)
class Session:
    """A parsed transcript and whether (and when) it is complete."""

    file: SessionFile
    transcript: Transcript
    completed_at: datetime | None
    completed_by: str | None  # marker | idle | None while the session is open

    @property
    def is_complete(self) -> bool:
        return self.completed_at is not None

    @property
    def day(self) -> str | None:
        return self.completed_at.date().isoformat() if self.completed_at else None

    @property
    def source_id(self) -> str:
        """Session key and compaction count: a new compaction makes a new version of the episode."""
        return f"{self.file.key}#c{len(self.transcript.compactions)}"


def session_files(root: Path, tenant: Tenant) -> list[SessionFile]:
    """The tenant's transcripts ``<agent>/sessions/<user>/*.jsonl`` (stat only, sorted by path).

    Listed by the one workspace scanner, so a transcript it skips (a symlink out of the tenant,
    a name that holds a secret) is not consolidated either.
    """
    if tenant.is_global:
        return []
    return as_session_files(scan_workspace(root, only=[tenant]).files.get(tenant, []))


def as_session_files(files: list[WorkspaceFile]) -> list[SessionFile]:
    found = [
        SessionFile(f.tenant, f.path, f.path.rsplit("/", 1)[-1][: -len(".jsonl")], f.size, f.mtime_ns)
        for f in files
        if f.kind == KIND_SESSIONS and f.path.endswith(".jsonl")
    ]
    return sorted(found, key=lambda f: f.path)


def completion(
    transcript: Transcript, modified_at: datetime, now: datetime, idle: timedelta
) -> tuple[datetime | None, str | None]:
    """(completed_at, completed_by) of a transcript, or (None, None) while it is still open."""
    if transcript.completed_at is not None:
        return transcript.completed_at, COMPLETED_BY_MARKER
    last = transcript.last_activity or modified_at
    if not transcript.turns and not transcript.compactions:
        return None, None  # nothing to consolidate, however old
    if now - last >= idle:
        return last, COMPLETED_BY_IDLE
    return None, None


def load_session(root: Path, file: SessionFile, now: datetime, idle: timedelta) -> Session | str:
    """The parsed session, or the reason it cannot be read."""
    transcript = read_transcript(root / file.path)
    if isinstance(transcript, str):
        return transcript
    completed_at, completed_by = completion(transcript, file.modified_at, now, idle)
    return Session(file, transcript, completed_at, completed_by)


@dataclass
class TenantSessions:
    complete: list[Session]
    open: list[Session]
    unreadable: list[tuple[str, str]]  # (path, reason)


def tenant_sessions(
    root: Path,
    tenant: Tenant,
    now: datetime,
    idle: timedelta,
    days: set[str] | None = None,
    since: str | None = None,
    skip: Callable[[SessionFile], bool] | None = None,
) -> TenantSessions:
    """The tenant's sessions, split into complete and open. Complete ones only of ``days`` when
    given, and only completed on or after the day ``since``; a transcript ``skip`` names (stat
    only) is not read at all."""
    result = TenantSessions([], [], [])
    # A session completes no later than its file was last written (the closing line, or the last
    # turn before the idle timeout), so files untouched since before the first day cannot belong to
    # these days: skipping them keeps a daily run from re-reading a tenant's whole history. A day of
    # slack covers clocks that disagree.
    first = min([*(days or []), *([since] if since else [])], default=None)
    oldest = datetime.fromisoformat(first).replace(tzinfo=UTC) - timedelta(days=1) if first else None
    for file in session_files(root, tenant):
        if (oldest is not None and file.modified_at < oldest) or (skip is not None and skip(file)):
            continue
        session = load_session(root, file, now, idle)
        if isinstance(session, str):
            result.unreadable.append((file.path, session))
        elif not session.is_complete:
            result.open.append(session)
        elif (not days or session.day in days) and (since is None or session.day >= since):
            result.complete.append(session)
    return result


class SessionsRead:
    """The complete sessions a run read, per (root, tenant), for the next step of the same run:
    the graph reads the turns the episodes just read instead of reading and scrubbing the files
    again. Made once per run (kept in ``WorkspaceResource.run_memo``) and passed in explicitly;
    the last ``tenants`` tenants are kept."""

    def __init__(self, tenants: int = 16):
        self.tenants = tenants
        self._by_tenant: OrderedDict[tuple[str, str], dict[str, Session]] = OrderedDict()

    def keep(self, root: Path, tenant: Tenant, sessions: list[Session]) -> None:
        key = (str(root), tenant.key)
        self._by_tenant[key] = {s.file.path: s for s in sessions}
        self._by_tenant.move_to_end(key)
        while len(self._by_tenant) > self.tenants:
            self._by_tenant.popitem(last=False)

    def of(self, root: Path, tenant: Tenant) -> dict[str, Session]:
        """{path: session} of the tenant's sessions read in this run."""
        return self._by_tenant.get((str(root), tenant.key), {})
