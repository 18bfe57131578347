"""Bulletins: what an agent should know about its user, as Markdown for a system prompt.

``memory``: Identity, Active Goals, Preferences, Recent Events, Recent Decisions (up to five
each, newest first). ``context``: pending todos and time-sensitive items, soonest first, from
now on. An item said twice (in a session and a note, in the profile and again) is listed once.
Both read the user's own memory (a team member falls back to its leader's) as it was known at
"now" (a past ``now`` leaves out what was said after it), and leave out plans a later statement
moved to another date.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from memory_pipeline.memories.operations import MemoryOperationError
from memory_pipeline.memories.query import ReadScope, memory_frame, superseded
from memory_pipeline.memories.store import TypedMemoryStore, now_utc

if TYPE_CHECKING:  # imported where a frame is made: polars takes 0.5 s to import
    import polars as pl

KINDS = ("memory", "context")
MEMORY_SECTIONS = (
    ("Identity", ("identity",)),
    ("Active Goals", ("goal",)),
    ("Preferences", ("preference",)),
    ("Recent Events", ("event",)),
    ("Recent Decisions", ("decision",)),
)
TIME_SENSITIVE_DAYS = 30
SAME_ITEM = 0.6
"""Two memories are one item when they name the same time (or none), share a number or identifier
if both hold one, and this share of the shorter one's content words is in the other: a plan told in a session and written in a note, a preference
in the profile and said again."""


_VALUE_RE = re.compile(r"\w*\d[\w,.:/-]*\w|\d")


def _words(row: dict) -> frozenset[str]:
    from memory_pipeline.text.summarize import content_words

    return frozenset(content_words(row["content"]))


def same_item(a: dict, b: dict) -> bool:
    """Whether two memories say the same thing (see ``SAME_ITEM``)."""
    if a["content_hash"] == b["content_hash"]:
        return True
    if a.get("happens_at") != b.get("happens_at"):
        return False
    values_a, values_b = set(_VALUE_RE.findall(a["content"])), set(_VALUE_RE.findall(b["content"]))
    if values_a and values_b and not values_a & values_b:
        return False  # "ticket LUM-38" and "ticket LUM-39": the same words about two things
    words_a, words_b = _words(a), _words(b)
    if not words_a or not words_b:
        return False
    return len(words_a & words_b) >= SAME_ITEM * min(len(words_a), len(words_b))


def distinct(rows, limit: int | None = None, seen: list[dict] | None = None) -> list[dict]:
    """``rows`` (dicts, best first) without an item said again, at most ``limit``; ``seen``: items
    already shown elsewhere, which are left out too (and the kept ones are added to it)."""
    seen = [] if seen is None else seen
    out = []
    for row in rows:
        if limit is not None and len(out) >= limit:
            break
        if any(same_item(row, other) for other in seen):
            continue
        seen.append(row)
        out.append(row)
    return out


def made_bulletin(
    store: TypedMemoryStore,
    scope: ReadScope,
    kind: str = "memory",
    *,
    per_section: int = 5,
    now: datetime | None = None,
    tz: ZoneInfo | None = None,
    title: str | None = None,
) -> tuple[str, datetime | None]:
    """The bulletin, and the first instant after ``now`` at which it reads differently
    (``next_change``; for ``context``, whose first line names the minute, the next minute at the
    latest)."""
    if kind not in KINDS:
        raise MemoryOperationError(f"bulletin kind {kind!r}: use 'memory' or 'context'")
    if not 1 <= per_section <= 50:
        raise MemoryOperationError(f"per_section must be from 1 to 50, got {per_section}")
    now = (now or now_utc()).astimezone(UTC)
    tz = tz or ZoneInfo("UTC")
    frame, said_next = current_memories(store, scope, now)
    heading = title or (scope.primary[0] if scope.primary else "memory")
    changes = next_change(frame, now, said_next)
    if kind == "memory":
        return _memory(frame, heading, per_section, now, tz), changes
    minute = now.replace(second=0, microsecond=0) + timedelta(minutes=1)
    return _context(frame, heading, per_section, now, tz), min(minute, changes or minute)


def next_change(frame: pl.DataFrame, now: datetime, said_next: datetime | None = None) -> datetime | None:
    """When a section next reads differently: an item scheduled at t stops being pending or
    upcoming once t has passed, and comes within the time-sensitive days at t -
    ``TIME_SENSITIVE_DAYS``; a statement said after ``now`` enters at ``said_next``. None when
    nothing lies ahead."""
    ahead = timedelta(days=TIME_SENSITIVE_DAYS)
    whens = frame["happens_at"].drop_nulls().to_list() if frame.height else []
    edges = [edge for when in whens for edge in (when, when - ahead) if edge > now]
    return min(edges + ([said_next] if said_next else []), default=None)


def current_memories(store: TypedMemoryStore, scope: ReadScope, now: datetime) -> tuple[pl.DataFrame, datetime | None]:
    """The memories a reader's bulletin or working memory is made of, as known at ``now``: the
    first scope holding any (the user's own, else a team member's leader), without what was said
    after ``now`` nor what a statement said by then replaced (a moved plan, an old address); with
    the first instant after ``now`` at which a statement was said (the memory reads differently
    then; None when none was)."""
    import polars as pl

    from memory_pipeline.memories.recall_source import said_at

    frame, tenants = pl.DataFrame(), []
    for tenants in (scope.primary, scope.fallback):
        if tenants:
            frame = memory_frame(store, tenants)
            if frame.height:
                break
    if not frame.height:
        return frame, None
    said = [said_at(*row) for row in frame.select("occurred_at", "created_at", "source").iter_rows()]
    gone = superseded(store, tenants)
    later = [t for t in said if t is not None and t > now]
    later += [r["new_said_at"] for r in gone.values() if r["new_said_at"] > now]
    replaced = [memory_id for memory_id, r in gone.items() if r["new_said_at"] <= now]
    known = pl.Series([t is None or t <= now for t in said], dtype=pl.Boolean)
    frame = frame.filter(known & ~pl.col("id").is_in(replaced))
    return frame, min(later, default=None)


def when_text(value: datetime | None, tz: ZoneInfo) -> str:
    if value is None:
        return ""
    local = value.astimezone(tz)
    return local.strftime("%Y-%m-%d") if (local.hour, local.minute) == (0, 0) else local.strftime("%Y-%m-%d %H:%M")


def _line(row: dict, tz: ZoneInfo, show: str | None = None) -> str:
    text = " ".join(row["content"].split())
    stamp = when_text(row.get(show), tz) if show else ""
    return f"- {text}" + (f" ({stamp})" if stamp else "")


def _recent(frame: pl.DataFrame) -> pl.DataFrame:
    """Newest statement first; undated profile lines (a MEMORY.md) after every dated one, since a
    dated statement ("I moved to Porto") is what supersedes the profile ("Lives in Lisbon")."""
    return frame.sort(["occurred_at", "confidence", "created_at"], descending=True, nulls_last=True)


def _memory(frame: pl.DataFrame, heading: str, n: int, now: datetime, tz: ZoneInfo) -> str:
    import polars as pl

    out = [f"# Memory: {heading}", ""]
    for title, types in MEMORY_SECTIONS:
        rows = frame.filter(pl.col("memory_type").is_in(list(types))) if frame.height else frame
        if rows.height and title == "Active Goals":
            rows = rows.filter(pl.col("happens_at").is_null() | (pl.col("happens_at") >= now))
        items = distinct(_recent(rows).iter_rows(named=True), n) if rows.height else []
        out.append(f"## {title}")
        show = "happens_at" if title == "Active Goals" else ("occurred_at" if title.startswith("Recent") else None)
        out += [_line(r, tz, show) for r in items] if items else ["- (none)"]
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _context(frame: pl.DataFrame, heading: str, n: int, now: datetime, tz: ZoneInfo) -> str:
    import polars as pl

    out = [f"# Context: {heading}", f"_as of {when_text(now, tz) or now.astimezone(tz).strftime('%Y-%m-%d %H:%M')} ({tz.key})_", ""]
    todos = frame.filter(
        (pl.col("memory_type") == "todo") & (pl.col("happens_at").is_null() | (pl.col("happens_at") >= now))
    ) if frame.height else frame
    out.append("## Pending Todos")
    if todos.height:
        todos = distinct(todos.sort(["happens_at", "created_at"], nulls_last=True).iter_rows(named=True), n)
        out += [_line(r, tz, "happens_at") for r in todos]
    else:
        out.append("- (none)")
    out.append("")
    horizon = now + timedelta(days=TIME_SENSITIVE_DAYS)
    soon = frame.filter(
        (pl.col("memory_type") != "todo") & (pl.col("happens_at") >= now) & (pl.col("happens_at") <= horizon)
    ) if frame.height else frame
    out.append(f"## Time-Sensitive (next {TIME_SENSITIVE_DAYS} days)")
    if soon.height:
        soon = distinct(soon.sort(["happens_at", "confidence"], descending=[False, True]).iter_rows(named=True), n)
        out += [f"- {when_text(r['happens_at'], tz)}: {' '.join(r['content'].split())}" for r in soon]
    else:
        out.append("- (none)")
    return "\n".join(out).rstrip() + "\n"
