"""``get(path, from_line, lines)``: exact lines of a memory the (agent, user) may read.

Paths are what recall cites: a workspace-relative file path (``support-bot/users/alice/MEMORY.md``,
or a whole citation ``...#L3-L7``), a typed memory ``facts/<id>`` or an episode ``episodes/<id>``
(its text read from the ``memories`` or ``episodes`` table). A file path is refused when it is
absolute, contains ``..``, leads (through a symlink) outside the workspace or into another
tenant's folder, or belongs to a tenant outside the reader's scope: its own user, its agent-wide
memory and its team leader's. A typed memory or episode is looked up in those same tenants only;
one held by any other tenant is answered exactly as an id that does not exist, so a guessed id
(a typed memory's id is a hash of its content) confirms nothing.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath

from memory_pipeline.config import Settings, get_settings
from memory_pipeline.recall.scope import path_tenant, recall_scopes
from memory_pipeline.store.tables import EPISODES, MEMORIES

_CITATION_RE = re.compile(r"^(?P<path>.+?)#L(?P<start>\d+)(?:-L?(?P<end>\d+))?$")
_LINE_FRAGMENT_RE = re.compile(r"#L[^/#]*$")  # a citation's line range, read where it did not parse
_RECORD_RE = re.compile(r"^(?P<source>facts|episodes)/(?P<id>[A-Za-z0-9_-]+)$")
"""A typed memory or an episode as search cites it; a file always has a suffix (``.md``)."""
_RECORDS = {  # cited source -> (table, text column, what it is called in an error)
    "facts": (MEMORIES.name, "content", "typed memory"),
    "episodes": (EPISODES.name, "summary", "episode"),
}


SCRUB_CONTEXT = 100
"""Lines read either side of the lines asked for, so that a secret spanning lines is seen whole."""


class GetError(ValueError):
    """The lines cannot be read (no such file, line out of range); the message says why."""


class AccessDeniedError(PermissionError):
    """The path is outside what this agent and user may read."""


@dataclass
class GetResult:
    path: str
    tenant: str
    start_line: int
    end_line: int
    total_lines: int
    lines: list[str]
    when: str | None = None  # when it was said or written: a turn's time, a note's day; None: undated

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    @property
    def citation(self) -> str:
        whole = self.start_line == 1 and self.end_line >= self.total_lines
        if whole and _RECORD_RE.match(self.path):
            return self.path  # as search cites a typed memory or an episode
        return f"{self.path}#L{self.start_line}-L{self.end_line}"

    def to_dict(self) -> dict:
        return {
            "path": self.path, "tenant": self.tenant, "start_line": self.start_line,
            "end_line": self.end_line, "total_lines": self.total_lines, "text": self.text,
            "citation": self.citation, "when": self.when,
        }


def parse_citation(path: str) -> tuple[str, int | None, int | None]:
    """``a/b.md#L3-L7`` -> (``a/b.md``, 3, 5 lines); a bare path -> (path, None, None)."""
    match = _CITATION_RE.match(path)
    if not match:
        return path, None, None
    start = int(match["start"])
    end = int(match["end"]) if match["end"] else start
    return match["path"], start, max(1, end - start + 1)


def get(
    path: str,
    from_line: int | None = None,
    lines: int | None = None,
    *,
    agent: str,
    user: str | None = None,
    root: str | Path | None = None,
    settings: Settings | None = None,
    store: str | Path | None = None,
) -> GetResult:
    """Lines ``from_line`` .. ``from_line + lines - 1`` (1-based; all to the end by default).

    ``store`` is the LanceDB URI typed memories and episodes are read from (default
    ``settings.lancedb_uri``).
    """
    settings = settings or get_settings()
    root_path = Path(root or settings.root).resolve()
    bare, cited_from, cited_lines = parse_citation(path.strip() if isinstance(path, str) else "")
    from_line = from_line if from_line is not None else (cited_from or 1)
    lines = lines if lines is not None else cited_lines
    if not bare:
        raise GetError("no path given: pass a path relative to the workspace root, as search cites it")
    record = _RECORD_RE.match(bare)
    if record:
        uri = str(store or settings.lancedb_uri)
        return _get_record(record["source"], record["id"], from_line, lines, agent, user, settings, uri)
    if bare.startswith(("/", "\\")) or PurePosixPath(bare).is_absolute() or PureWindowsPath(bare).drive:
        raise AccessDeniedError(
            f"absolute path {bare!r} refused: pass the path relative to the workspace root, as search cites it"
        )
    parts = PurePosixPath(bare.replace("\\", "/")).parts
    if ".." in parts:
        raise AccessDeniedError(f"path {bare!r} refused: '..' may not appear in a memory path")
    rel = "/".join(p for p in parts if p not in (".", ""))
    owner = path_tenant(rel)
    allowed = {s.tenant for s in recall_scopes(agent, user, settings)}
    if owner is None or owner not in allowed:
        who = f"{agent}/{user}" if user else agent
        raise AccessDeniedError(
            f"{rel!r} is not in the memory {who} may read (its own user's files, {agent}'s "
            "agent-wide memory and its team leader's)"
        )
    _check_range(from_line, lines)
    try:
        full = _checked_file(root_path, rel, owner)
        picked, total = _read_lines(full, rel, from_line, lines, settings.max_file_bytes)
    except AccessDeniedError:
        raise
    except OSError as exc:  # a name too long for the file system, a folder with no access, ...
        raise GetError(f"{rel!r} cannot be read: {(exc.strerror or str(exc)).lower()}") from None
    if from_line > max(total, 1):
        raise GetError(f"{rel!r} has {total} line(s); from_line {from_line} is past its end")
    result = GetResult(rel, owner.key, from_line, from_line + max(len(picked), 1) - 1, total, picked)
    result.when = _file_when(rel, picked)
    return result


def _read_lines(full: Path, rel: str, from_line: int, count: int | None, max_bytes: int) -> tuple[list[str], int]:
    """(the lines asked for, scrubbed; the file's line count), reading the file as a stream.

    Only the lines asked for and ``SCRUB_CONTEXT`` lines either side are held: a secret that
    spans lines (a private key) is recognised from its context, as the index saw it in the whole
    file. A file over the index's size limit is refused: it is not indexed, so nothing cites it.
    """
    size = full.stat().st_size
    if size > max_bytes:
        raise GetError(
            f"{rel!r} is {size / 1e6:.1f} MB, over the {max_bytes / 1e6:.1f} MB limit of what is indexed "
            "(MEMORY_PIPELINE_MAX_FILE_BYTES): it is recorded, not indexed, and nothing cites it"
        )
    stop = None if count is None else from_line - 1 + count
    before: deque[str] = deque(maxlen=SCRUB_CONTEXT)
    wanted: list[str] = []
    after: list[str] = []
    total = 0
    try:
        # Universal newlines count "\r\n", "\r" and "\n" as the index's split_lines does.
        with full.open(encoding="utf-8-sig", newline=None) as fh:
            for total, line in enumerate(fh, 1):
                line = line[:-1] if line.endswith("\n") else line
                if total < from_line:
                    before.append(line)
                elif stop is None or total <= stop:
                    wanted.append(line)
                elif len(after) < SCRUB_CONTEXT:
                    after.append(line)
    except UnicodeDecodeError:
        raise GetError(f"{rel!r} is not a UTF-8 text file") from None
    if not wanted:
        return [], total
    from memory_pipeline.text.chunking import split_lines
    from memory_pipeline.text.scrub import scrub_secrets  # detect-secrets: only when a file is read

    scrubbed = split_lines(scrub_secrets("\n".join([*before, *wanted, *after])).text)
    return scrubbed[len(before) : len(before) + len(wanted)], total


def _file_when(rel: str, lines: list[str]) -> str | None:
    """The first picked turn's time in a transcript, a dated note's or a dreamed document's day,
    else None: an undated note's file time says when it was last edited, not when its lines were
    true (``row_when``)."""
    import json
    from datetime import datetime

    from memory_pipeline.sources.workspace import file_date
    from memory_pipeline.recall.timeline import dreamed_day, short_when

    if rel.endswith(".jsonl"):
        for line in lines:
            try:
                return short_when(datetime.fromisoformat(str(json.loads(line)["ts"]).replace("Z", "+00:00")))
            except (ValueError, KeyError, TypeError, AttributeError):
                continue
    return short_when(file_date(rel) or dreamed_day(rel))


def _checked_file(root_path: Path, rel: str, owner) -> Path:
    full = root_path / rel
    if full.is_symlink() or any(p.is_symlink() for p in full.parents if _under(p, root_path)):
        target = full.resolve()
        inside = _under(target, root_path)
        if not inside or path_tenant(target.relative_to(root_path).as_posix()) != owner:
            raise AccessDeniedError(f"{rel!r} is a symlink leading out of its tenant's memory: refused")
    if not full.is_file():
        # The path as cited, never the server's folders: the message may reach an MCP client.
        if (fragment := _LINE_FRAGMENT_RE.search(rel)) is not None:  # "MEMORY.md#L3-x": the lines are wrong, not the file
            raise GetError(f"{fragment[0]!r} is no line range: a citation ends in #L<from> or #L<from>-L<to> (e.g. #L3-L7)")
        raise GetError(f"no file {rel!r} in the workspace: check the path against a search citation")
    return full


def _check_range(from_line: int, lines: int | None) -> None:
    if from_line < 1:
        raise GetError(f"from_line must be 1 or more, got {from_line}")
    if lines is not None and lines < 1:
        raise GetError(f"lines must be 1 or more, got {lines}")


def _pick(rel: str, tenant: str, text: str, from_line: int, lines: int | None) -> GetResult:
    # Text is scrubbed here as it is for the index (a file is read raw); the line count does not
    # change, so line numbers still match the citation.
    from memory_pipeline.text.chunking import split_lines
    from memory_pipeline.text.scrub import scrub_secrets  # detect-secrets: only when a file is read

    all_lines = split_lines(scrub_secrets(text).text)
    if all_lines and all_lines[-1] == "" and text.endswith(("\n", "\r")):
        all_lines = all_lines[:-1]
    total = len(all_lines)
    if from_line > max(total, 1):
        raise GetError(f"{rel!r} has {total} line(s); from_line {from_line} is past its end")
    stop = total if lines is None else min(total, from_line - 1 + lines)
    picked = all_lines[from_line - 1 : stop]
    return GetResult(rel, tenant, from_line, from_line + max(len(picked), 1) - 1, total, picked)


def _get_record(
    source: str, rid: str, from_line: int, lines: int | None, agent: str, user: str | None,
    settings: Settings, uri: str,
) -> GetResult:
    """A typed memory's or an episode's text, looked up in the reader's scopes only."""
    table_name, column, kind = _RECORDS[source]
    scopes = recall_scopes(agent, user, settings)  # validates the ids, as a file read does
    rel = f"{source}/{rid}"
    found = _read_record(uri, table_name, column, rid, [s.key for s in scopes])
    if not found:
        who = f"{agent}/{user}" if user else agent
        # Said alike whether the id does not exist or another tenant holds it.
        raise GetError(
            f"no {kind} {rel!r} in the memory {who} may read (its own user's, {agent}'s agent-wide "
            "and its team leader's): check the id against a search citation"
        )
    rank = {s.key: s.rank for s in scopes}
    tenant, text, when = min(found, key=lambda row: rank[row[0]])
    _check_range(from_line, lines)
    result = _pick(rel, tenant, text or "", from_line, lines)
    result.when = when
    return result


def _read_record(uri: str, table_name: str, column: str, rid: str, tenants: list[str]) -> list[tuple]:
    """(tenant, text, when) of the rows with id ``rid`` held by ``tenants``; ``when`` is a typed
    memory's time (when it happened, else when stored) or an episode's session (when it completed)."""
    import lancedb

    from memory_pipeline.recall.timeline import short_when

    from memory_pipeline.store.base import sql_in, sql_str

    if "://" not in uri and not Path(uri).is_dir():
        return []
    db = lancedb.connect(uri)
    names = db.list_tables()
    if table_name not in getattr(names, "tables", names):
        return []
    where = f"{sql_in('tenant', tenants)} AND id = {sql_str(rid)}"
    table = db.open_table(table_name)
    times = [c for c in ("occurred_at", "completed_at", "created_at") if c in table.schema.names]
    rows = table.search().where(where).select(["tenant", column, *times]).limit(None).to_arrow().to_pylist()
    return [(r["tenant"], r[column], short_when(next((r[c] for c in times if r[c] is not None), None), day_only=True))
            for r in rows]


def _under(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
        return True
    except ValueError:
        return False
