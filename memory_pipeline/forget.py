"""Right to be forgotten: ``forget_tenant(agent, user)`` removes everything the pipeline keeps of
one user (or, without a user, of a whole agent and every one of its users).

What goes:
- every row of the tenant in every LanceDB table that has a ``tenant`` column (chunks, the file
  manifest, episodes, entities, relations, entity merges, typed memories, their manifest and
  their audit log), found by reading the tables the database holds, not a fixed list;
- embedding-cache rows no remaining chunk uses: the cache is keyed by (model, text hash) and
  holds no tenant, so the only safe rule is to keep exactly the vectors of text another tenant
  still has (this also drops vectors of the tenant's earlier file versions, which nothing else
  can attribute to it); the cost is re-embedding such text if it comes back;
- the audit log's rows of the tenant, replaced by one row saying the tenant was forgotten, when
  and by whom: a memory id is a hash of the content, so keeping old ids would let someone
  confirm a guessed fact;
- the bytes: a LanceDB delete only marks rows, and their text stays in data files, older
  versions and the full-text index. Every table that held the tenant has its live rows rewritten
  into new files, its scalar and full-text indices rebuilt, and every older version removed;
- recall's persisted indices of the tenant (``<LanceDB folder>/_recall_index/<table>/<tenant>/``,
  see ``recall/index/files.py``): its rows, vectors and words; and its last working memory and
  bulletins, kept beside them (``_recall_index/context/<tenant>/``, ``memories/context_file.py``);
- files the pipeline wrote for the tenant: dreamed files (``_system/dreaming/*.md`` that start
  with the dreaming marker) and the IO manager's per-partition hand-off files;
- with a Dagster instance: the tenant's partition, the runs of the tenant alone (events and
  compute logs), and in runs shared with other tenants only the tenant's own records, the text
  those runs share and their compute logs (``orchestration/instance/forget_runs.py``): the other tenants'
  materializations stay.

What stays, and is reported: files a person or agent wrote (``MEMORY.md``, notes, transcripts,
and dated notes that flush appended to, which a person may also write). Unless they are deleted
too (``delete_sources=True``), the next L0 run indexes them again.

Every step is an ordinary LanceDB commit (delete, then ``store.purge.purge_table``: update of
every row in place, index rebuild, cleanup), never an overwrite from a snapshot: LanceDB rebases
each onto a concurrent writer's commit or reports a conflict, and a conflict is retried as the
store retries its writes, so a write that lands meanwhile is kept. On a local folder the
database's commit lock is also held throughout, so writers on the machine wait. On object
storage there is no lock; what remains is in docs/reliability.md (a write for the forgotten
tenant itself that commits after the delete stays; files of a crashed write are left to a later
cleanup; a reader still on a removed version fails once).
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from memory_pipeline.activation.access_log import forget_spool
from memory_pipeline.l0.store import ChunkIndex
from memory_pipeline.orchestration.instance.forget_runs import forget_in_instance, runs_covering
from memory_pipeline.orchestration.instance.run_workers import in_flight_runs, wait_for_runs
from memory_pipeline.recall.index.files import forget_index_files
from memory_pipeline.store.base import commit_lock, is_local, sql_in

# ``_purge`` by this name, so a test can wrap it to write meanwhile.
from memory_pipeline.store.purge import commit as _commit
from memory_pipeline.store.purge import purge_table as _purge
from memory_pipeline.store.tables import CHUNKS, EMBEDDING_CACHE, MEMORY_AUDIT
from memory_pipeline.tenancy import GLOBAL_USER, Tenant, UnknownTenantError, validate_id

log = logging.getLogger(__name__)

DREAMING_MARKER_PREFIX = "<!-- memory_pipeline:dreaming"
CACHE_DELETE_BATCH = 2000  # text hashes per delete predicate
RUN_WAIT_S = 300.0  # how long a forget lets the tenant's runs in flight finish
RUN_WAIT_PASSES = 3  # forgets in a row when runs of the tenant keep starting meanwhile


@dataclass
class ForgetReport:
    """What ``forget_tenant`` removed, and what it left because a person wrote it."""

    tenants: list[str]
    rows_deleted: dict[str, int] = field(default_factory=dict)  # table -> rows
    cache_rows_deleted: int = 0
    tables_rewritten: list[str] = field(default_factory=list)
    files_deleted: list[str] = field(default_factory=list)
    sources_left: list[str] = field(default_factory=list)
    sources_deleted: list[str] = field(default_factory=list)
    partitions_deleted: list[str] = field(default_factory=list)
    runs_deleted: int = 0  # runs of the forgotten tenants only
    runs_split: int = 0  # runs shared with other tenants: kept, the forgotten tenants' records removed
    events_deleted: int = 0  # event records of the forgotten tenants in shared runs
    events_rewritten: int = 0  # other tenants' records of shared runs, their text metadata removed
    compute_logs_deleted: int = 0  # runs whose captured step output was deleted
    runs_waited_for: list[str] = field(default_factory=list)  # in flight when the forget began

    def to_dict(self) -> dict:
        return {
            "tenants": self.tenants,
            "rows_deleted": self.rows_deleted,
            "cache_rows_deleted": self.cache_rows_deleted,
            "tables_rewritten": self.tables_rewritten,
            "files_deleted": self.files_deleted,
            "sources_left": self.sources_left,
            "sources_deleted": self.sources_deleted,
            "partitions_deleted": self.partitions_deleted,
            "runs_deleted": self.runs_deleted,
            "runs_split": self.runs_split,
            "events_deleted": self.events_deleted,
            "events_rewritten": self.events_rewritten,
            "compute_logs_deleted": self.compute_logs_deleted,
            "runs_waited_for": self.runs_waited_for,
        }


def _matches(key: str, agent: str, user: str | None) -> bool:
    return key == f"{agent}~{user}" if user is not None else key.startswith(f"{agent}~")


def forget_tenant(
    agent: str,
    user: str | None = None,
    *,
    root: str | Path,
    lancedb_uri: str | Path,
    io_dir: str | Path | None = None,
    instance=None,
    delete_sources: bool = False,
    actor: str = "forget-tenant",
    now: datetime | None = None,
    wait_for_runs_s: float = RUN_WAIT_S,
) -> ForgetReport:
    """Forget user ``user`` of ``agent`` (every user and the agent-wide memory when ``user`` is None).

    UnknownTenantError when nothing of the tenant is known: no folder in the workspace, no row,
    no partition (ids are case-sensitive: ``Ana`` is not ``ana``). With an instance, the tenant's
    runs in flight are let finish first (queued ones are cancelled, dead ones marked failed),
    within ``wait_for_runs_s``, else RunsStillInFlight and nothing is deleted; a run that
    started meanwhile is waited for and what it wrote is deleted too.
    """
    validate_id(agent, "agent id")
    if user is not None:
        Tenant(agent, user)  # refuses a crafted user id
    now = now or datetime.now(UTC)
    root = Path(root).resolve()
    store = ChunkIndex(lancedb_uri)
    _require_known(store, root, instance, agent, user)
    covers = runs_covering(instance, lambda key: _matches(key, agent, user)) if instance is not None else None
    waited: list[str] = []
    for _ in range(RUN_WAIT_PASSES):
        if covers is not None:
            waited += wait_for_runs(instance, covers, wait_for_runs_s)
        report = _forget_once(store, root, agent, user, io_dir, instance, delete_sources, actor, now)
        if covers is None or not in_flight_runs(instance, covers):
            break
        # A run of the tenant started during the forget: it is waited for, and forgotten in turn.
    report.runs_waited_for = sorted(set(waited))
    log.info("forgot %s: %s", ", ".join(report.tenants) or f"{agent}/{user}", report.rows_deleted)
    return report


def _forget_once(
    store: ChunkIndex, root: Path, agent: str, user: str | None, io_dir, instance, delete_sources: bool,
    actor: str, now: datetime,
) -> ForgetReport:
    tenants: set[str] = {f"{agent}~{user}"} if user is not None else set()
    # Writers on this machine wait while the tables are read and rewritten (see commit_lock).
    with commit_lock(store.uri):
        report = _forget_rows(store, agent, user, tenants, root, actor, now)
        # Recall's persisted indices hold the tenant's text, vectors and words too.
        report.files_deleted += forget_index_files(store.uri, lambda key: _matches(key, agent, user))
        report.files_deleted += forget_spool(store.uri, lambda key: _matches(key, agent, user))
    report.files_deleted += _delete_dreamed_files(root, report.tenants)
    if io_dir is not None:
        report.files_deleted += _delete_handoff_files(Path(io_dir), report.tenants)
    left = _source_files(root, agent, user)
    if delete_sources:
        report.sources_deleted = _delete_sources(root, agent, user)
    else:
        report.sources_left = left
    if instance is not None:
        from memory_pipeline.orchestration.partitions import TENANTS_PARTITION

        registered = [k for k in instance.get_dynamic_partitions(TENANTS_PARTITION) if _matches(k, agent, user)]
        report.tenants = sorted(set(report.tenants) | set(registered))
        dagster = forget_in_instance(instance, report.tenants)
        report.partitions_deleted, report.runs_deleted = dagster.partitions_deleted, dagster.runs_deleted
        report.runs_split, report.events_deleted = dagster.runs_split, dagster.events_deleted
        report.events_rewritten, report.compute_logs_deleted = dagster.events_rewritten, dagster.compute_logs_deleted
    return report


def _require_known(store: ChunkIndex, root: Path, instance, agent: str, user: str | None) -> None:
    """UnknownTenantError, naming the known users, when nothing of the tenant is known anywhere."""
    from memory_pipeline.orchestration.partitions import SESSION_TENANTS_PARTITION, TENANTS_PARTITION

    keys = {t.key for t in _workspace_tenants(root, agent)}
    keys |= {key for present in _held_tenants(store, agent, None).values() for key in present}
    if instance is not None:
        for partitions in (TENANTS_PARTITION, SESSION_TENANTS_PARTITION):
            keys |= {k for k in instance.get_dynamic_partitions(partitions) if _matches(k, agent, None)}
    if user is None and not keys:
        raise UnknownTenantError(f"unknown agent {agent!r}: nothing of it is in the workspace, the memory or the instance")
    if user is not None and f"{agent}~{user}" not in keys:
        users = ", ".join(sorted(Tenant.from_key(k).user_id for k in keys)) or "none"
        raise UnknownTenantError(
            f"unknown user {user!r} of agent {agent!r} (user ids are case-sensitive): known users: {users}"
        )


def _held_tenants(store: ChunkIndex, agent: str, user: str | None) -> dict[str, list[str]]:
    """{table: the tenant keys of ``agent`` (or of that one user) it holds} over every table."""
    held: dict[str, list[str]] = {}
    for name in store.table_names():
        table = store.db.open_table(name)
        if "tenant" not in table.schema.names:
            continue
        keys = table.search().select(["tenant"]).limit(None).to_arrow().column("tenant")
        present = sorted(k for k in pc.unique(keys).to_pylist() if k and _matches(k, agent, user))
        if present:
            held[name] = present
    return held


def _forget_rows(
    store: ChunkIndex, agent: str, user: str | None, tenants: set[str], root: Path, actor: str, now: datetime
) -> ForgetReport:
    """Delete the tenants' rows from every table that holds them, purge those tables, prune the cache."""
    tables = store.table_names()
    held = _held_tenants(store, agent, user)
    for present in held.values():
        tenants.update(present)
    if user is None:
        tenants |= {t.key for t in _workspace_tenants(root, agent)}
    report = ForgetReport(tenants=sorted(tenants))
    local = is_local(store.uri)

    for name, present in held.items():
        table = store.db.open_table(name)
        where = sql_in("tenant", present)
        report.rows_deleted[name] = table.count_rows(where)
        _commit(table.delete, where)
        if name == MEMORY_AUDIT.name:
            _commit(table.add, _forget_audit_rows(table.schema, report.tenants, report.rows_deleted[name], actor, now))
        _purge(table, local)
        report.tables_rewritten.append(name)

    if EMBEDDING_CACHE.name in tables:
        report.cache_rows_deleted = _prune_cache(store, local)
        if report.cache_rows_deleted:
            report.tables_rewritten.append(EMBEDDING_CACHE.name)
    return report


def _workspace_tenants(root: Path, agent: str) -> list[Tenant]:
    from memory_pipeline.sources.workspace import scan_workspace

    if not (root / agent).is_dir():
        return []
    return [t for t in scan_workspace(root).tenants if t.agent_id == agent]


def _forget_audit_rows(schema: pa.Schema, tenants: list[str], removed: int, actor: str, now: datetime) -> pa.Table:
    """The audit keeps one row per forgotten tenant: that it was forgotten, by whom and when."""
    import uuid

    rows = [
        {
            "id": uuid.uuid4().hex, "tenant": key, "memory_id": "*", "op": "forget", "memory_type": None,
            "fields": ["tenant"], "reason": f"right to be forgotten: every memory of the tenant deleted "
            f"({removed} audit row(s) removed)", "actor": actor, "at": now,
        }
        for key in tenants
    ]
    return pa.Table.from_pylist(rows, schema=schema)


def _prune_cache(store: ChunkIndex, local: bool) -> int:
    """Drop cache vectors whose text no remaining chunk has; returns how many went."""
    cache = store.db.open_table(EMBEDDING_CACHE.name)
    used: set[str] = set()
    if store.has(CHUNKS):
        column = store.db.open_table(CHUNKS.name).search().select(["text_hash"]).limit(None).to_arrow().column("text_hash")
        used = set(pc.unique(column).to_pylist())
    cached = cache.search().select(["text_hash"]).limit(None).to_arrow().column("text_hash")
    unused = sorted(set(pc.unique(cached).to_pylist()) - used)
    removed = 0
    for start in range(0, len(unused), CACHE_DELETE_BATCH):
        where = sql_in("text_hash", unused[start : start + CACHE_DELETE_BATCH])
        removed += cache.count_rows(where)
        _commit(cache.delete, where)
    if removed:
        _purge(cache, local)
    return removed


def _tenant_memory_dirs(root: Path, key: str) -> list[Path]:
    tenant = Tenant.from_key(key)
    if tenant.is_global:
        return [root / tenant.agent_id / "memory"]
    return [root / tenant.agent_id / "users" / tenant.user_id / "memory"]


def _delete_dreamed_files(root: Path, tenants: list[str]) -> list[str]:
    """Dreamed files carry a marker line; a file without it was written by a person and stays."""
    deleted = []
    for key in tenants:
        for memory in _tenant_memory_dirs(root, key):
            folder = memory / "_system" / "dreaming"
            if not folder.is_dir() or folder.is_symlink():
                continue
            for path in sorted(folder.iterdir()):
                if path.is_symlink() or not path.is_file():
                    continue
                ours = path.name.startswith(".") and path.name.endswith(".tmp")  # an interrupted write
                if not ours and path.suffix == ".md":
                    with path.open("r", encoding="utf-8", errors="replace") as fh:
                        ours = fh.read(len(DREAMING_MARKER_PREFIX)) == DREAMING_MARKER_PREFIX
                if ours:
                    path.unlink()
                    deleted.append(path.relative_to(root).as_posix())
            for empty in (folder, folder.parent):
                try:
                    empty.rmdir()
                except OSError:
                    pass
    return deleted


def _delete_handoff_files(io_dir: Path, tenants: list[str]) -> list[str]:
    """The IO manager's pickled step outputs (chunk text, vectors) of the tenant's partitions."""
    if not io_dir.is_dir():
        return []
    deleted = []
    names = {f"{k}.pkl" for k in tenants}
    for path in io_dir.rglob("*.pkl"):
        stem = path.name
        # Multi-partition keys (day|tenant) are stored with '|' escaped.
        if stem in names or any(stem.endswith(f"%7C{k}.pkl") for k in tenants):
            path.unlink()
            deleted.append(f"io/{path.relative_to(io_dir).as_posix()}")  # never the server's folders
    return deleted


def _source_roots(root: Path, agent: str, user: str | None) -> list[Path]:
    if user is None:
        return [root / agent]
    if user == GLOBAL_USER:
        return [root / agent / "MEMORY.md", root / agent / "memory.md", root / agent / "memory"]
    return [root / agent / "users" / user, root / agent / "sessions" / user]


def _source_files(root: Path, agent: str, user: str | None) -> list[str]:
    files = []
    for base in _source_roots(root, agent, user):
        if base.is_file():
            files.append(base)
        elif base.is_dir():
            files += [p for p in base.rglob("*") if p.is_file()]
    return sorted(p.relative_to(root).as_posix() for p in files)


def _delete_sources(root: Path, agent: str, user: str | None) -> list[str]:
    deleted = _source_files(root, agent, user)
    for base in _source_roots(root, agent, user):
        if base.is_symlink() or base.is_file():
            base.unlink()
        elif base.is_dir():
            shutil.rmtree(base)
    return deleted
