"""Time in recall: when each result was said or written, and which results a later one replaced.

Reads what consolidation stored (``supersessions``, ``timeline/records.py``) and decides
nothing about validity itself. A result is superseded when it holds a replaced statement (a turn,
a note line or a typed memory named by a record) and not the statement that replaced it. For a question about the current state, a superseded result
never outranks the newest statement of its chain: that statement is placed just above it (found
among the candidates or, when the query is about it too, brought in from the tenant's rows); both
stay, the older one labelled with the date it was replaced. A question about the past ("when
did", "in May", "before the move", "originally") keeps the plain ranking.
"""

from __future__ import annotations

import re
import threading
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from datetime import UTC, date, datetime

import numpy as np

from memory_pipeline.recall.answers import holds_kind, other_subject, take_places
from memory_pipeline.recall.query import QueryInfo
from memory_pipeline.store import tables

# Table names as the search's table cache knows them.
SUPERSESSIONS = tables.SUPERSESSIONS.name
RECORD_COLUMNS = ["old_ref", "new_ref", "new_said_at", "old_sentence"]  # what a record (``Record``) holds
RELATED = 0.5
"""When a replaced result holds several statements (a note's section, an episode), its successor
is placed above it only if its cosine to the query is at least this share of the result's: the
question may be about another statement of the result. A replaced turn or typed memory is one
statement, which the query matched: its successor is about the same attribute, unless the record
names the one sentence of it that changed (the turn says more): then the query may be about another
sentence, and the same test applies."""
_PAST_RE = re.compile(
    r"\b(?:did|was|were|had|used to|before|previously|originally|formerly|at first|initially|"
    r"earlier|former|prior|history|past|first|changed?|old|anymore|any more|until|ago)\b",
    re.IGNORECASE,
)


def about_past(text: str, period) -> bool:
    """A question about how things were, not how they are."""
    return period is not None or bool(_PAST_RE.search(text or ""))


def short_when(value: datetime | date | None, day_only: bool = False) -> str | None:
    """A time as an LLM reads it at a glance: "2026-11-18 08:47 UTC", or a day "2026-11-18"."""
    if value is None:
        return None
    if isinstance(value, datetime):
        value = value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
        return f"{value:%Y-%m-%d}" if day_only else f"{value:%Y-%m-%d %H:%M} UTC"
    return f"{value:%Y-%m-%d}"


@dataclass(frozen=True)
class Record:
    old_ref: str
    new_ref: str
    new_said_at: datetime
    old_sentence: str | None = None  # the sentence that changed, when the statement says more


class TenantTimeline:
    """One tenant's records, indexed by file and line."""

    def __init__(self, records: list[dict]):
        self.by_ref = {
            r["old_ref"]: Record(r["old_ref"], r["new_ref"], r["new_said_at"], r.get("old_sentence")) for r in records
        }
        self.lines: dict[str, tuple[list[int], list[Record]]] = {}
        for ref, record in sorted(self.by_ref.items(), key=lambda kv: _split(kv[0])):
            path, line = _split(ref)
            lines, recs = self.lines.setdefault(path, ([], []))
            lines.append(line)
            recs.append(record)

    def __bool__(self) -> bool:
        return bool(self.by_ref)

    def record_of(self, path: str, start: int, end: int, text: str = "") -> Record | None:
        """The record of a replaced statement this row holds, unless the row holds its successor too.
        A dreamed file's lines restate statements: a line citing one that was replaced holds it."""
        if path.startswith("facts/"):
            return self.by_ref.get(path)
        if DREAMED_RE.search(path):
            cited = cited_statements(text)
            return next((r for r in map(self.by_ref.get, cited) if r is not None and r.new_ref not in cited), None)
        found = self.lines.get(path)
        if not found:
            return None
        lines, recs = found
        inside = recs[bisect_left(lines, start):bisect_right(lines, end)]
        for record in inside:
            new_path, new_line = _split(record.new_ref)
            if not (new_path == path and start <= new_line <= end):
                return record
        return None

    def latest(self, record: Record) -> Record:
        """The last record of the chain (21 Nov -> 28 Nov -> 5 Dec gives the one naming 5 Dec)."""
        seen = {record.old_ref}
        while record.new_ref in self.by_ref and record.new_ref not in seen:
            seen.add(record.new_ref)
            record = self.by_ref[record.new_ref]
        return record


DREAMED_RE = re.compile(r"(?:^|/)_system/dreaming/(?:((?:19|20)\d\d)(\d\d)(\d\d)-)?[^/]+\.md$")
"""A dreamed document, and the day its name gives (``YYYYMMDD-consolidated.md``)."""


def dreamed_day(path: str) -> date | None:
    """The day a dreamed document was written, from its name."""
    m = DREAMED_RE.search(path or "")
    try:
        return date(int(m.group(1)), int(m.group(2)), int(m.group(3))) if m and m.group(1) else None
    except ValueError:
        return None


_CITES_ONE_RE = re.compile(r"\[[^\[\]·]*? · ([^\[\]\s]+#L\d+)\]")


def cited_statements(text: str) -> list[str]:
    """The statements (``path#Lline``) that the lines of a dreamed text cite one by one; a line
    citing a range (a recurring pattern, a whole episode) restates no one statement."""
    return _CITES_ONE_RE.findall(text or "")


def _split(ref: str) -> tuple[str, int]:
    path, _, line = ref.rpartition("#L")
    if not path:
        return ref, 1
    try:
        return path, int(line)
    except ValueError:
        return ref, 1


class TimelineCache:
    """Per (database, tenant) timelines, reloaded when the records' table moves to a new version."""

    def __init__(self):
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, str], tuple[int, TenantTimeline]] = {}

    def get(self, cache, tenant: str) -> TenantTimeline:
        tables = cache.table_names()
        version = cache.version(SUPERSESSIONS) if SUPERSESSIONS in tables else -1
        key = (cache.uri, tenant)
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None and hit[0] == version:
                return hit[1]
        timeline = _load(cache, tenant, tables)
        with self._lock:
            self._entries[key] = (version, timeline)
        return timeline


def _read(cache, name: str, tenant: str, columns: list[str]):
    return cache.read_tenant(name, tenant, columns).to_pylist()


def _load(cache, tenant: str, tables: set[str]) -> TenantTimeline:
    return TenantTimeline(_read(cache, SUPERSESSIONS, tenant, RECORD_COLUMNS) if SUPERSESSIONS in tables else [])


TIMELINES = TimelineCache()


def row_when(rows, i: int) -> str | None:
    """When row ``i`` was said or written: the turn's time, the note's day, a typed memory's day;
    None for an undated line (a profile kept by hand, and what is read from it): its file's time
    says only when the file was last edited (in a fresh clone: the clone), not when the line was
    true, and shown beside a dated statement it would read as the newer. A dreamed document is
    dated by the day its name gives."""
    if rows.day[i] is not None:
        return short_when(rows.day[i])
    if rows.when[i] is not None:
        return short_when(rows.when[i], day_only=rows.source[i] != "sessions")
    return short_when(dreamed_day(rows.path[i]))


def locate(rows, ref: str) -> int | None:
    """The row of ``rows`` holding ``ref`` (a ``path#Lline`` or ``facts/<id>``), if any."""
    path, line = _split(ref)
    index = rows.__dict__.get("_by_path")
    if index is None:
        index = {}
        for i, p in enumerate(rows.path):
            index.setdefault(p, []).append(i)
        rows.__dict__["_by_path"] = index
    for i in index.get(path, []):
        if path.startswith("facts/") or rows.start_line[i] <= line <= rows.end_line[i]:
            return i
    return None


def restating(rows, ref: str) -> list[int]:
    """The rows of ``rows`` read from the statement ``ref`` (typed memories citing its line)."""
    if rows.cites is None:
        return []
    index = rows.__dict__.get("_by_cite")
    if index is None:
        index = {}
        for i, cited in enumerate(rows.cites):
            if cited:
                index.setdefault(cited, []).append(i)
        rows.__dict__["_by_cite"] = index
    return index.get(ref, [])


def cite_statements(candidates: list, cache, transcripts) -> None:
    """Give each candidate read from transcript turns the ids of those turns, from the
    ``transcripts`` source's rows (searched or not): a typed memory cites the turn it was read
    from, and a passage of a dreamed document the turn each of its lines cites. Its result then
    cites those turns as the turns' own results would."""
    for cand in candidates:
        refs = _statement_refs(cand.rows, cand.row)
        if transcripts is None or not refs:
            continue
        rows = cache.rows(transcripts, cand.rows.tenant)
        if rows is None or not len(rows):
            continue
        turns: list[str] = []
        for ref in refs:
            j = locate(rows, ref)
            if j is not None:
                turns += [t for t in rows.turn_ids[j] if t not in turns]
        if turns:
            cand.cited_turns = turns


def _statement_refs(rows, i: int) -> list[str]:
    """The transcript lines (``path#Lline``) row ``i`` restates: a typed memory's own, or those
    the lines of a dreamed passage cite one by one."""
    ref = rows.cites[i] if rows.cites is not None else None
    if ref:
        return [ref] if "#L" in ref else []
    if rows.source[i] == "memory" and DREAMED_RE.search(rows.path[i]):
        return cited_statements(rows.text[i])
    return []


def unit_cosine(rows, i: int, qvec: np.ndarray) -> float:
    if rows.vectors.shape[1] != qvec.shape[0]:
        return 0.0
    return float(np.clip(rows.vectors[i] @ qvec, 0.0, 1.0))


def annotate(candidates, cache) -> None:
    """Give each candidate its time (``when``) and the record that replaced it (``record``)."""
    timelines: dict[str, TenantTimeline] = {}
    for cand in candidates:
        rows, i = cand.rows, cand.row
        tenant = rows.tenant
        if tenant not in timelines:
            timelines[tenant] = TIMELINES.get(cache, tenant)
        timeline = timelines[tenant]
        cand.when = row_when(rows, i)
        if timeline:
            cand.record = timeline.record_of(rows.path[i], int(rows.start_line[i]), int(rows.end_line[i]), rows.text[i])


def newest_first(candidates: list, qvec: np.ndarray, cache, sources: dict, pool: int) -> list:
    """Candidates reordered so no replaced one outranks the newest statement of its chain.

    ``sources``: each searched source and the names asked of it; a newest statement outside them
    (a transcript turn when only notes were asked) is not brought in: the replaced one keeps its label."""
    from dataclasses import replace

    by_row = {(id(c.rows), c.row): c for c in candidates}
    moved = False
    for cand in list(candidates[:pool]):
        if cand.record is None:
            continue
        last = TIMELINES.get(cache, cand.rows.tenant).latest(cand.record)
        # The successor's own turn or note line is placed; when the query seems about something
        # else than it, a unit built from it (the episode of its session) may stand for it, as
        # the replaced row may be such a unit too.
        holders = []
        for source, names in sources.items():
            rows = cache.rows(source, cand.rows.tenant)
            if rows is None or not len(rows):
                continue
            for j in (locate(rows, last.new_ref), *restating(rows, last.new_ref)):
                if j is not None and rows.source[j] in names:
                    holders.append((rows, j, unit_cosine(rows, j, qvec)))
        single = cand.rows.source[cand.row] in ("sessions", "facts") and not cand.record.old_sentence
        # Unless the replaced row is one statement, the question may be about something else it says.
        related = [h for h in holders if single or h[2] >= RELATED * cand.vector]
        # Every unit stating the successor goes above the replaced one, the closest to the question
        # first: a typed memory restating a long note's successor line reads as the question does,
        # where the note's whole section does not.
        for n, (rows, j, cosine) in enumerate(sorted(related, key=lambda h: h[2])):
            succ = by_row.get((id(rows), j))
            if succ is None:
                succ = replace(cand, rows=rows, row=j, vector=cosine, text=0.0, around={}, record=None)
                candidates.append(succ)
                by_row[(id(rows), j)] = succ
            if succ.when is None:  # brought in, or a candidate from past the annotated pool
                annotate([succ], cache)
            if succ.score <= cand.score:
                succ.score = cand.score + 1e-6 * (n + 1)
                moved = True
    if moved:
        candidates.sort(key=lambda c: (-c.score, c.scope.rank))
    return candidates


def superseded_note(record: Record | None) -> dict | None:
    if record is None:
        return None
    note = {"by": record.new_ref, "at": short_when(record.new_said_at, day_only=True)}
    if record.old_sentence:
        note["sentence"] = record.old_sentence  # only this sentence of the result was replaced
    return note


# ---------------------------------------------------------------- current state at read time
# For a question about the present, the newest of the candidates that answer the same question
# ranks first, whether or not consolidation recorded the change (mem0 and Graphiti resolve it the
# same way: every statement kept, dated). "Answer the same question": a statement close to the top
# candidate's relevance, holding a value of the kind the question asks for, and about no other
# subject than the question's.
SAME_QUESTION = 0.8
"""A candidate answers the question the top one answers when its relevance to the query (fused,
before decay and boosts) is at least this share of the best among the first ``CURRENT_WINDOW``."""
CURRENT_WINDOW = 6
SAME_ATTRIBUTE = 0.4
"""A change told in other words ("sold the Skoda and picked up a Corolla" after "I drive a Skoda")
matches the question less than the statement it changes, but reads close to it: a candidate whose
cosine to the best one is at least this answers the same question if its relevance is at least
``SAME_ATTRIBUTE_RELEVANCE`` of the best of its source (a turn of the best turn). On the
knowledge-update scenarios through the pipeline (``memory-pipeline eval updates``) 0.55 / 0.5
ranked the newest first in 0.895 of the changes, 0.45 in 0.930, 0.4 / 0.35 in 0.947, with no
look-alike's record or LoCoMo dev figure moved."""
SAME_ATTRIBUTE_RELEVANCE = 0.35


def same_attribute(a, b) -> bool:
    """Whether two candidates read alike (their vectors' cosine, ``SAME_ATTRIBUTE``)."""
    va, vb = a.rows.vectors[a.row], b.rows.vectors[b.row]
    return va.shape == vb.shape and float(va @ vb) >= SAME_ATTRIBUTE


UNDATED = "undated"
"""What an undated line ranked below a newer answer is marked ``earlier`` with."""


def undated(candidate) -> bool:
    """Whether a candidate has no time: no day in its file's name, no time of its own."""
    rows, i = candidate.rows, candidate.row
    return rows.day[i] is None and rows.when[i] is None


def current_first(candidates: list, info: QueryInfo) -> list:
    """Among the first candidates, those answering the question the top one answers take their
    places newest first; each older one ranked below a newer one is marked ``earlier``.

    A first candidate stating no number for a question asking one (the question asked once more,
    advice around it) answers nothing: it yields its place to them too. Numbers only: a date is
    often the session's, not the statement's, and an episode's digits are those of its day."""
    kind = info.asks_kind
    window = candidates[:CURRENT_WINDOW]
    if kind is None or len(window) < 2:
        return candidates
    top = max(window, key=lambda c: c.relevance)
    best = top.relevance
    # A turn is measured against the best turn, a typed memory against the best typed memory:
    # a unit restating a statement in the third person, with names, matches a question so worded
    # better than any first-person turn does, the turn that changed it included.
    best_of: dict[str, float] = {}
    for c in window:
        source = c.rows.source[c.row]
        best_of[source] = max(best_of.get(source, 0.0), c.relevance)
    group = [
        n for n, c in enumerate(window)
        # A candidate a record says was replaced is no current answer, whatever its date (a
        # dreamed document is dated by the day it was written, not by what its lines restate).
        if (c.when or undated(c)) and c.record is None and (c.relevance >= SAME_QUESTION * best or (
            c.relevance >= SAME_ATTRIBUTE_RELEVANCE * best_of[c.rows.source[c.row]] and same_attribute(c, top)))
        and holds_kind(c.rows.content(c.row), kind) and not other_subject(c.rows.content(c.row), info.text)
    ]
    lead = window[0]
    yields = kind == "number" and 0 not in group and not holds_kind(lead.rows.content(lead.row), kind)
    if yields:
        group = [n for n in group if window[n].rows.source[window[n].row] != "episodes"]
    if len(group) < (1 if yields else 2):
        return candidates
    # An undated line (a profile kept by hand) counts as older than every dated statement, as it
    # does for supersession.
    ordered = sorted((window[n] for n in group), key=lambda c: (not undated(c), c.when or ""), reverse=True)
    newest = ordered[0].when or ""
    # The newest is shown whenever an older answer, or the lead it displaced, is.
    ordered[0].kept_with = max(c.kept_score for c in ordered + ([lead] if yields else []))
    newest_dated = not undated(ordered[0])
    for c in ordered[1:]:
        if (c.when or "") < newest or (newest_dated and undated(c)):
            c.earlier = c.when or UNDATED
    if yields:
        group, ordered = [0, *group], [*ordered, lead]
    take_places(window, group, ordered)
    return window + candidates[CURRENT_WINDOW:]
