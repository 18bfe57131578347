"""Scanning the workspace root: which tenants exist and which of their files to index.

Layout under the root (DESIGN §2):

- ``<agent>/MEMORY.md``, ``<agent>/memory/**``: the agent-wide tenant ``(agent, _global)``
- ``<agent>/users/<user>/MEMORY.md``, ``.../memory/**``: the tenant ``(agent, user)``
- ``<agent>/sessions/<user>/<session_id>.jsonl``: transcripts of the tenant ``(agent, user)``

Scanning only stats files; it never reads them, so a sensor can afford it every tick. Nothing
outside the root is ever listed: symlinks that lead out of it are skipped with a reason.

This is where text enters the pipeline, so secrets are scrubbed here: a Markdown file is read
scrubbed (``read_text_file``; transcripts are scrubbed field by field when parsed), a file or
folder whose name holds a secret is skipped (its path would be stored and cited), and every
skipped path and reason is scrubbed before anyone logs or stores it.

This is the one walker of the workspace: the L0 index, consolidation (its transcripts) and typed
memories see the tenants and files it finds, under the same include, exclude and symlink rules.
The include and exclude patterns are settings (``Settings.include``, ``Settings.exclude``), read
here when a caller passes none, so no reader can see files another does not.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path, PurePosixPath

from wcmatch import glob as wcglob

from memory_pipeline.config import DEFAULT_EXCLUDE, DEFAULT_INCLUDE, get_settings
from memory_pipeline.tenancy import GLOBAL_USER, InvalidTenantError, Tenant
from memory_pipeline.text.scrub import scrub_secrets

_GLOB_FLAGS = wcglob.GLOBSTAR | wcglob.DOTGLOB

KIND_MEMORY = "memory"
KIND_SESSIONS = "sessions"
KIND_OTHER = "other"
DERIVED_DIR = "_system"
"""Where the pipeline writes what it derives from a tenant's statements (dreamed documents)."""


def is_derived(path: str) -> bool:
    """Whether a file is the pipeline's own (under ``_system/``): searchable, but never read as
    statements again, so no unit is rebuilt from another derived unit."""
    return DERIVED_DIR in PurePosixPath(path).parts


@dataclass(frozen=True)
class WorkspaceFile:
    """One file of a tenant, as seen by a scan (stat only)."""

    tenant: Tenant
    path: str  # POSIX path relative to the root, the id users see in citations
    scope_path: str  # path relative to the tenant's folder, matched against include/exclude
    kind: str  # memory | sessions | other
    size: int
    mtime_ns: int


@dataclass
class ScanResult:
    files: dict[Tenant, list[WorkspaceFile]] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)

    @property
    def tenants(self) -> list[Tenant]:
        return sorted(self.files)


def tenant_fingerprint(files: Sequence[WorkspaceFile]) -> str:
    """A digest of (path, size, mtime) of a tenant's files: equal digests mean nothing changed."""
    digest = hashlib.blake2b(digest_size=16)
    for f in sorted(files, key=lambda f: f.path):
        digest.update(f"{f.path}\0{f.size}\0{f.mtime_ns}\n".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def classify(scope_path: str, include: Sequence[str], exclude: Sequence[str]) -> str:
    if wcglob.globmatch(scope_path, list(exclude), flags=_GLOB_FLAGS):
        return KIND_OTHER
    if not wcglob.globmatch(scope_path, list(include), flags=_GLOB_FLAGS):
        return KIND_OTHER
    return KIND_SESSIONS if scope_path.startswith("sessions/") else KIND_MEMORY


def tenant_dirs(root: Path, tenant: Tenant) -> list[tuple[Path, str]]:
    """The folders holding a tenant's files, each with the prefix of its scope paths."""
    agent_dir = root / tenant.agent_id
    if tenant.is_global:
        return [(agent_dir, "")]
    return [
        (agent_dir / "users" / tenant.user_id, ""),
        (agent_dir / "sessions" / tenant.user_id, f"sessions/{tenant.user_id}/"),
    ]


def _why(exc: OSError, vanished: str, failed: str) -> str:
    """The skip reason for an error met while scanning: the path went away, or it cannot be read."""
    return vanished if isinstance(exc, FileNotFoundError) else f"{failed}: {exc.strerror or exc}"


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root)
        return True
    except (ValueError, OSError):
        return False


class _Walker:
    def __init__(self, root: Path, include: Sequence[str], exclude: Sequence[str]):
        self.root = root.resolve()
        self.include = list(include)
        self.exclude = list(exclude)
        self.result = ScanResult()

    def skip(self, path: Path, reason: str) -> None:
        self.result.skipped.append((scrub_secrets(self._rel(path)).text, scrub_secrets(reason).text))

    def secret_in_name(self, path: Path) -> bool:
        """A name that holds a secret is skipped: its path would be stored in every row."""
        rel = self._rel(path)
        found = sum(scrub_secrets(rel).counts.values())
        if found:
            self.skip(path, f"the name holds a secret ({found} redacted); rename it to index it")
        return bool(found)

    def _rel(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

    def _owned_by(self, target: Path, tenant: Tenant) -> bool:
        """Whether a symlink's target lies in ``tenant``'s own folders (not another user's)."""
        parts = target.relative_to(self.root).parts
        if len(parts) < 2 or parts[0] != tenant.agent_id:
            return False
        if tenant.is_global:
            return parts[1] not in ("users", "sessions")
        return len(parts) >= 3 and parts[1] in ("users", "sessions") and parts[2] == tenant.user_id

    def walk_tenant(self, tenant: Tenant, prune_top: set[str] = frozenset()) -> None:
        files = self.result.files.setdefault(tenant, [])
        for base, prefix in tenant_dirs(self.root, tenant):
            if not base.is_dir() or base.is_symlink():  # a symlinked tenant folder is not followed
                continue
            self._walk(tenant, base, base, prefix, files, prune_top)
        self._prefer_upper_memory(files)

    def _walk(self, tenant, base: Path, folder: Path, prefix: str, out: list, prune_top) -> None:
        try:
            entries = list(os.scandir(folder))
        except OSError as exc:
            self.skip(folder, _why(exc, "folder vanished during the scan", "folder cannot be listed"))
            return
        for entry in sorted(entries, key=lambda e: e.name):
            path = Path(entry.path)
            if folder == base and entry.name in prune_top:
                continue
            if self.secret_in_name(path):
                continue
            try:
                if entry.is_symlink():
                    if not _inside(path, self.root):
                        self.skip(path, "symlink leads outside the workspace root")
                        continue
                    if not self._owned_by(path.resolve(), tenant):
                        self.skip(path, "symlink leads into another tenant's memory")
                        continue
                    if path.is_dir():
                        self.skip(path, "symlinked folder is not followed")
                        continue
                if entry.is_dir(follow_symlinks=False):
                    self._walk(tenant, base, path, prefix, out, prune_top)
                    continue
                if not entry.is_file():
                    self.skip(path, "not a regular file")
                    continue
                stat = entry.stat()
            except OSError as exc:
                self.skip(path, _why(exc, "file vanished during the scan", "cannot stat"))
                continue
            scope_path = prefix + path.relative_to(base).as_posix()
            out.append(
                WorkspaceFile(
                    tenant=tenant,
                    path=self._rel(path),
                    scope_path=scope_path,
                    kind=classify(scope_path, self.include, self.exclude),
                    size=stat.st_size,
                    mtime_ns=stat.st_mtime_ns,
                )
            )

    @staticmethod
    def _prefer_upper_memory(files: list[WorkspaceFile]) -> None:
        """``memory.md`` is only a fallback: with ``MEMORY.md`` present it is not indexed."""
        names = {f.scope_path for f in files}
        if "MEMORY.md" in names and "memory.md" in names:
            for i, f in enumerate(files):
                if f.scope_path == "memory.md":
                    files[i] = WorkspaceFile(**{**f.__dict__, "kind": KIND_OTHER})


def scan_workspace(
    root: str | Path,
    include: Sequence[str] | None = None,
    exclude: Sequence[str] | None = None,
    only: Sequence[Tenant] | None = None,
) -> ScanResult:
    """Find every tenant under ``root`` (or only those in ``only``) and stat its files; which are
    memory follows ``include`` and ``exclude``, by default the settings' patterns.

    A missing root gives an empty result with one skip reason, not an error, so a sensor on a
    fresh deployment keeps ticking.
    """
    if include is None or exclude is None:
        settings = get_settings()
        include = settings.include if include is None else include
        exclude = settings.exclude if exclude is None else exclude
    walker = _Walker(Path(root), include, exclude)
    if not walker.root.is_dir():
        walker.skip(walker.root, "workspace root does not exist")
        return walker.result
    if only is not None:
        for tenant in only:
            if walker.secret_in_name(walker.root / tenant.agent_id / tenant.user_id):
                continue
            walker.walk_tenant(tenant, prune_top={"users", "sessions"} if tenant.is_global else set())
        return walker.result
    for tenant in _tenants_under(walker):
        walker.walk_tenant(tenant, prune_top={"users", "sessions"} if tenant.is_global else set())
    # A tenant is a tenant once it has a file; an agent folder holding only users is not one.
    walker.result.files = {t: f for t, f in walker.result.files.items() if f}
    return walker.result


GLOBAL_FOLDER_REASON = (
    f"'{GLOBAL_USER}' is the agent-wide scope, not a user: its notes are <agent>/MEMORY.md and "
    "<agent>/memory/, and its transcripts are not read; move the files there or into a user's folder"
)


def _tenants_under(walker: _Walker) -> list[Tenant]:
    """The tenants whose folders are under the root; a folder whose name is not a valid id, holds
    a secret, or is a user folder named ``_global``, is skipped with its reason."""
    tenants = []
    for agent_entry in sorted(os.scandir(walker.root), key=lambda e: e.name):
        if not agent_entry.is_dir(follow_symlinks=False):
            continue
        try:
            Tenant(agent_entry.name)
        except InvalidTenantError as exc:
            walker.skip(Path(agent_entry.path), str(exc))
            continue
        if walker.secret_in_name(Path(agent_entry.path)):
            continue
        agent = agent_entry.name
        tenants.append(Tenant(agent, GLOBAL_USER))
        users: dict[str, Path] = {}
        for sub in ("users", "sessions"):
            folder = Path(agent_entry.path) / sub
            if folder.is_dir() and not folder.is_symlink():
                for entry in sorted(os.scandir(folder), key=lambda e: e.name):
                    if entry.is_dir(follow_symlinks=False) and entry.name == GLOBAL_USER:
                        walker.skip(Path(entry.path), GLOBAL_FOLDER_REASON)
                    elif entry.is_dir(follow_symlinks=False):
                        users.setdefault(entry.name, Path(entry.path))
                    elif entry.is_symlink():
                        walker.skip(Path(entry.path), "symlinked folder is not followed")
        for user, folder in sorted(users.items()):
            try:
                tenant = Tenant(agent, user)
            except InvalidTenantError as exc:
                walker.skip(folder, str(exc))
                continue
            if not walker.secret_in_name(folder):
                tenants.append(tenant)
    return tenants


def tenant_folder_skips(root: str | Path) -> list[tuple[str, str]]:
    """(path, reason) of every folder under ``root`` that looks like a tenant's but is not used
    (an invalid agent or user id, a name holding a secret), without scanning any tenant's files."""
    walker = _Walker(Path(root), DEFAULT_INCLUDE, DEFAULT_EXCLUDE)
    if not walker.root.is_dir():
        return []
    _tenants_under(walker)
    return walker.result.skipped


@dataclass(frozen=True)
class ReadResult:
    text: str | None
    content_hash: str | None  # of the bytes as written
    reason: str | None  # why the file is not indexed, when text is None
    secrets: dict[str, int] = field(default_factory=dict)  # redacted from ``text``, by type


def read_text_file(path: Path, max_bytes: int, *, scrub: bool = True) -> ReadResult:
    """Read a UTF-8 text file, or say why it is not indexable (binary, not UTF-8, too big, gone).

    The text comes back scrubbed of secrets, with its lines where they were. ``scrub=False`` is
    for a transcript, which ``parse_transcript`` scrubs field by field once the JSON is decoded.
    """
    try:
        size = path.stat().st_size
        if size > max_bytes:
            return ReadResult(
                None,
                None,
                f"file is {size / 1e6:.1f} MB, over the {max_bytes / 1e6:.1f} MB limit "
                "(MEMORY_PIPELINE_MAX_FILE_BYTES)",
            )
        data = path.read_bytes()
    except FileNotFoundError:
        return ReadResult(None, None, "file vanished before it could be read")
    except OSError as exc:
        return ReadResult(None, None, f"cannot read: {exc.strerror or exc}")
    content_hash = hashlib.sha256(data).hexdigest()
    if b"\0" in data[:8192]:
        return ReadResult(None, content_hash, "binary file (NUL bytes)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return ReadResult(
            None, content_hash, f"not UTF-8: invalid byte 0x{data[exc.start]:02x} at offset {exc.start}"
        )
    if not scrub:
        return ReadResult(text, content_hash, None)
    scrubbed = scrub_secrets(text)
    return ReadResult(scrubbed.text, content_hash, None, scrubbed.counts)


_DATED_RE = re.compile(r"(?:^|/)memory/(?:.*/)?(\d{4})-(\d{2})-(\d{2})\.md$")


def file_date(path: str) -> date | None:
    """The date of a dated note ``memory/YYYY-MM-DD.md``; None for every other file."""
    match = _DATED_RE.search(path)
    if not match:
        return None
    try:
        return date(int(match[1]), int(match[2]), int(match[3]))
    except ValueError:
        return None
