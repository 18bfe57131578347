"""``expand(citation)``: what a unit of memory was built from, one level or all the way down.

Summaries sit above the messages they came from, and each level cites the one below:

- a dreamed line (a bullet of ``_system/dreaming/*-consolidated.md``) cites ``[session · path#Ls-Le]``:
  its sources are the episodes of that session holding those lines, and below each episode the
  turns the line cites;
- an episode (``episodes/<id>``) cites its transcript lines: its sources are its turns;
- a typed memory (``facts/<id>``) or a relation (``relations/<id>``) was read from one statement,
  a turn or a note line (``path#Lline``): that line is its source;
- lines of a transcript (``path#Ls-Le``, as search cites a session window) are their turns; lines
  of a dreamed file are their dreamed lines; lines of any other note are a source themselves.

Turns and note lines are the bottom: they have no sources. Every text is read through ``get`` (the
reader's scopes only, scrubbed), so expanding never shows what ``get`` would refuse; a cited
source that is gone (a pruned episode, an edited file) is reported as missing, not an error.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from memory_pipeline.config import Settings, get_settings
from memory_pipeline.recall.get import GetError, GetResult, get, parse_citation
from memory_pipeline.recall.scope import recall_scopes
from memory_pipeline.recall.timeline import DREAMED_RE
from memory_pipeline.store.tables import EPISODES, MEMORIES, RELATIONS

DREAMED_LINE, DREAMED_LINES, EPISODE, TURN, TRANSCRIPT_LINES, NOTE_LINES, TYPED_MEMORY, RELATION, MISSING = (
    "dreamed_line", "dreamed_lines", "episode", "turn", "transcript_lines", "note_lines", "typed_memory",
    "relation", "missing",
)
MAX_UNITS = 400
"""Most units one answer holds (a whole dreamed file expanded to every turn is about 150)."""
_CITED_RE = re.compile(r"\[(?P<session>[^\[\]·]*?) · (?P<cite>[^\[\]]+#L\d+(?:-L\d+)?)\]\s*$")
_RELATION_RE = re.compile(r"^relations/(?P<id>[A-Za-z0-9_-]+)$")


@dataclass
class Unit:
    """One unit of memory and, below it, what it was built from."""

    citation: str
    kind: str
    text: str
    when: str | None = None
    sources: list[Unit] = field(default_factory=list)
    expanded: bool = False  # False where the depth asked for stopped (its sources were not read)
    truncated: bool = False  # on the unit asked for: MAX_UNITS were reached and sources left out
    cites: tuple[str, ...] = field(default=(), repr=False)
    """Lines it names below it: a relation's statement, an episode's turns a dreamed line cites."""

    def to_dict(self) -> dict:
        out = {"citation": self.citation, "kind": self.kind, "text": self.text, "when": self.when}
        if self.expanded:
            out["sources"] = [s.to_dict() for s in self.sources]
        if self.truncated:
            out["truncated"] = True
        return out

    def leaves(self) -> list[Unit]:
        """The units at the bottom of what was expanded."""
        if not self.sources:
            return [self]
        return [leaf for s in self.sources for leaf in s.leaves()]


class ExpandError(GetError):
    """The citation cannot be expanded; the message says why and what to pass."""


@dataclass
class _Reader:
    agent: str
    user: str | None
    settings: Settings
    store: str
    budget: int = MAX_UNITS

    def get(self, path: str) -> GetResult:
        return get(path, agent=self.agent, user=self.user, settings=self.settings, store=self.store)

    def take(self) -> bool:
        self.budget -= 1
        return self.budget >= 0

    def rows(self, table: str, where: str, columns: list[str]) -> list[dict]:
        """Rows of ``table`` held by the reader's tenants, best scope first."""
        import lancedb

        from memory_pipeline.store.base import sql_in

        if "://" not in self.store and not Path(self.store).is_dir():
            return []
        db = lancedb.connect(self.store)
        names = db.list_tables()
        if table not in getattr(names, "tables", names):
            return []
        rank = {s.key: s.rank for s in recall_scopes(self.agent, self.user, self.settings)}
        found = (db.open_table(table).search().where(f"{sql_in('tenant', rank)} AND ({where})")
                 .select(["tenant", *columns]).limit(None).to_arrow().to_pylist())
        return sorted(found, key=lambda row: rank[row["tenant"]])


def expand(
    citation: str,
    *,
    agent: str,
    user: str | None = None,
    depth: int | None = 1,
    settings: Settings | None = None,
    store: str | Path | None = None,
) -> Unit:
    """The unit ``citation`` names, with its sources ``depth`` levels down (``None``: to the turns
    and note lines at the bottom)."""
    if depth is not None and depth < 0:
        raise ExpandError(f"depth must be 0 or more, got {depth}")
    settings = settings or get_settings()
    reader = _Reader(agent, user, settings, str(store or settings.lancedb_uri), MAX_UNITS)
    cited = (citation or "").strip()
    if not cited:
        raise ExpandError("no citation given: pass one as search cites it (path#Lstart-Lend, facts/<id>, "
                          "episodes/<id> or relations/<id>)")
    unit = _resolve(cited, reader)
    _grow(unit, reader, depth)
    unit.truncated = reader.budget < 0
    return unit


def _resolve(cited: str, reader: _Reader) -> Unit:
    relation = _RELATION_RE.match(cited)
    if relation:
        return _relation(relation["id"], reader)
    found = reader.get(cited)
    if found.path.startswith("facts/"):
        return Unit(found.citation, TYPED_MEMORY, found.text, found.when)
    if found.path.startswith("episodes/"):
        return Unit(found.citation, EPISODE, found.text, found.when)
    return _lines_unit(found)


def _lines_unit(found: GetResult) -> Unit:
    """Lines of a file: one turn, one dreamed line, or a passage of them."""
    if found.path.endswith(".jsonl") and found.start_line == found.end_line:
        return _turn(found.path, found.start_line, found.lines[0] if found.lines else "")
    if DREAMED_RE.search(found.path):
        if found.start_line == found.end_line and _CITED_RE.search(found.text):
            return Unit(_cite(found), DREAMED_LINE, found.text, found.when)
        return Unit(_cite(found), DREAMED_LINES, found.text, found.when)
    kind = TRANSCRIPT_LINES if found.path.endswith(".jsonl") else NOTE_LINES
    return Unit(_cite(found), kind, found.text, found.when)


def _grow(unit: Unit, reader: _Reader, depth: int | None) -> None:
    if depth == 0 or unit.expanded:
        return
    unit.sources = _sources(unit, reader)
    unit.expanded = True
    for source in unit.sources:
        _grow(source, reader, None if depth is None else depth - 1)


def _sources(unit: Unit, reader: _Reader) -> list[Unit]:
    if unit.kind in (TURN, NOTE_LINES, MISSING):
        return []
    if unit.kind == TYPED_MEMORY:
        rows = reader.rows(MEMORIES.name, _id_is(unit.citation.split("/", 1)[1]), ["source", "source_ref"])
        ref = rows[0]["source_ref"] if rows else None
        return [_statement(ref, reader)] if ref else []
    if unit.kind == RELATION:
        return [_statement(ref, reader) for ref in unit.cites]
    if unit.kind == EPISODE:
        return _episode_turns(unit, reader)
    if unit.kind == TRANSCRIPT_LINES:
        path, start, count = parse_citation(unit.citation)
        return _turns(path, range(start, start + count), reader)
    if unit.kind == DREAMED_LINES:
        path, start, count = parse_citation(unit.citation)
        lines = unit.text.split("\n")
        return [Unit(f"{path}#L{start + i}", DREAMED_LINE, line, unit.when) for i, line in enumerate(lines)
                if _CITED_RE.search(line) and reader.take()]
    if unit.kind == DREAMED_LINE:
        return _dreamed_line_episodes(unit, reader)
    return []


def _statement(ref: str, reader: _Reader) -> Unit:
    """The turn or note line a typed memory or relation was read from."""
    try:
        found = reader.get(ref)
    except GetError as exc:
        return Unit(ref, MISSING, str(exc))
    if found.path.endswith(".jsonl"):
        return _turn(found.path, found.start_line, found.lines[0] if found.lines else "")
    return Unit(_cite(found), NOTE_LINES, found.text, found.when)


def _cite(found: GetResult) -> str:
    """``path#Ln`` for one line, ``path#Ls-Le`` for several, as recall cites them."""
    if found.start_line == found.end_line:
        return f"{found.path}#L{found.start_line}"
    return f"{found.path}#L{found.start_line}-L{found.end_line}"


def _relation(rid: str, reader: _Reader) -> Unit:
    rows = reader.rows(RELATIONS.name, _id_is(rid), ["subject", "predicate", "object", "evidence", "path", "line",
                                                     "said_at", "valid_from"])
    if not rows:
        who = f"{reader.agent}/{reader.user}" if reader.user else reader.agent
        raise ExpandError(f"no relation 'relations/{rid}' in the memory {who} may read: check the id")
    from memory_pipeline.recall.timeline import short_when

    row = rows[0]
    return Unit(f"relations/{rid}", RELATION, f"{row['subject']} — {row['predicate']}: {row['object']}",
                short_when(row["said_at"] or row["valid_from"], day_only=True), cites=(f"{row['path']}#L{row['line']}",))


def _episode_turns(unit: Unit, reader: _Reader) -> list[Unit]:
    """An episode's turns: those a dreamed line cites when reached from one, else all of them."""
    if unit.cites:
        path = parse_citation(unit.cites[0])[0]
        return _turns(path, [parse_citation(c)[1] for c in unit.cites], reader)
    rows = reader.rows(EPISODES.name, _id_is(unit.citation.split("/", 1)[1]), ["path", "start_line", "end_line"])
    if not rows:
        return []
    row = rows[0]
    return _turns(row["path"], range(row["start_line"], row["end_line"] + 1), reader)


def _dreamed_line_episodes(unit: Unit, reader: _Reader) -> list[Unit]:
    """The episodes of the cited session holding the cited lines; below each, the cited turns.
    When no episode holds them any more (pruned), the cited turns themselves."""
    from memory_pipeline.recall.timeline import short_when
    from memory_pipeline.store.base import sql_str

    match = _CITED_RE.search(unit.text)
    path, start, count = parse_citation(match["cite"])
    cited = range(start, start + count)
    rows = reader.rows(EPISODES.name, f"path = {sql_str(path)} AND session_id = {sql_str(match['session'].strip())}",
                       ["id", "start_line", "end_line", "l0_abstract", "completed_at"])
    out = []
    for row in rows:
        held = [line for line in cited if row["start_line"] <= line <= row["end_line"]]
        if held and reader.take():
            out.append(Unit(f"episodes/{row['id']}", EPISODE, row["l0_abstract"], short_when(row["completed_at"]),
                            cites=tuple(f"{path}#L{line}" for line in held)))
    return out or _turns(path, cited, reader)


def _turns(path: str, lines, reader: _Reader) -> list[Unit]:
    """The turns at ``lines`` of one transcript, read in one ``get``."""
    lines = sorted(set(lines))
    if not lines:
        return []
    try:
        found = reader.get(f"{path}#L{lines[0]}-L{lines[-1]}")
    except GetError as exc:
        return [Unit(f"{path}#L{lines[0]}-L{lines[-1]}", MISSING, str(exc))]
    out = []
    for line in lines:
        at = line - found.start_line
        if 0 <= at < len(found.lines) and reader.take():
            out.append(_turn(found.path, line, found.lines[at]))
        elif at >= len(found.lines):
            out.append(Unit(f"{path}#L{line}", MISSING, f"{found.path!r} has {found.total_lines} line(s)"))
    return out


def _turn(path: str, line: int, raw: str) -> Unit:
    """One transcript line as a turn: "role: content" and its time."""
    from memory_pipeline.recall.timeline import short_when
    from memory_pipeline.sources.transcripts import parse_transcript

    parsed = parse_transcript(raw)
    if parsed.turns:
        turn = parsed.turns[0]
        return Unit(f"{path}#L{line}", TURN, f"{turn.role}: {turn.content}", short_when(turn.ts))
    if parsed.compactions:
        _, summary, ts = parsed.compactions[0]
        return Unit(f"{path}#L{line}", TURN, f"compaction: {summary}", short_when(ts))
    try:
        shown = json.dumps(json.loads(raw), ensure_ascii=False)
    except ValueError:
        shown = raw
    return Unit(f"{path}#L{line}", TURN, shown)


def _id_is(rid: str) -> str:
    from memory_pipeline.store.base import sql_str

    return f"id = {sql_str(rid)}"
