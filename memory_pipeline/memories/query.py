"""Questions to the typed memories: typed filters, recall over memories, and scopes.

Time windows are computed in the user's timezone: ``happens_within="1d"`` at 23:30 in Lisbon
reaches 23:30 tomorrow, and a date-only bound such as ``occurred_to="2026-11-10"`` includes the
whole of 10 November local time, however far that day is from UTC.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from memory_pipeline.config import Settings
from memory_pipeline.embedding import Embedder
from memory_pipeline.memories.operations import MemoryOperationError, check_type, public
from memory_pipeline.memories.recall_source import FACTS
from memory_pipeline.memories.store import TypedMemoryStore, now_utc
from memory_pipeline.recall.scope import recall_scopes
from memory_pipeline.recall.search import NoIndexError, search
from memory_pipeline.recall.index.kept_reads import read_tenants
from memory_pipeline.recall.sources import tenant_cache
from memory_pipeline.store.base import sql_in
from memory_pipeline.store.tables import MEMORIES, SUPERSESSIONS

if TYPE_CHECKING:  # imported where a frame is made: polars takes 0.5 s to import
    import polars as pl

SORTS = ("scheduled", "recent", "confidence")
MAX_RESULTS = 100
_DURATION_RE = re.compile(r"^\s*(\d{1,5})\s*(m|min|h|d|w)\s*$", re.I)
_UNITS = {"m": "minutes", "min": "minutes", "h": "hours", "d": "days", "w": "weeks"}


@dataclass(frozen=True)
class ReadScope:
    """The tenants a reader sees, best first; fallback tenants only when the others hold nothing."""

    primary: list[str]
    fallback: list[str]


def read_scope(agent: str, user: str | None, settings: Settings) -> ReadScope:
    scopes = recall_scopes(agent, user, settings)
    return ReadScope([s.key for s in scopes if not s.fallback], [s.key for s in scopes if s.fallback])


def own_scope(agent: str, user: str | None, settings: Settings) -> ReadScope:
    """The user's own memory (and its leader's for a team member), without agent-wide notes."""
    scope = read_scope(agent, user, settings)
    return ReadScope(scope.primary[:1], scope.fallback[:1])


def parse_duration(value: str) -> timedelta:
    match = _DURATION_RE.match(value or "")
    if not match:
        raise MemoryOperationError(
            f"happens_within {value!r} is not a duration: use a number and a unit, e.g. 90m, 12h, 7d or 2w"
        )
    return timedelta(**{_UNITS[match.group(2).lower()]: int(match.group(1))})


# Times a bound may name: a window or a day added to one stays within what a datetime holds.
_YEARS = (1000, 8999)


def parse_bound(value: str | datetime | date | None, tz: ZoneInfo, end: bool = False) -> datetime | None:
    """A time bound: ISO datetime (naive = the user's local time) or date (a whole local day)."""
    if value is None or value == "":
        return None
    moment: datetime | None = None
    day: date | None = None
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, date):
        day = value
    else:
        text = str(value).strip()
        try:
            if len(text) == 10:
                day = date.fromisoformat(text)
            else:
                moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise MemoryOperationError(
                f"time {value!r} is not ISO-8601: use 2026-11-10 or 2026-11-10T09:30 (local) or ...+00:00"
            ) from None
    if not _YEARS[0] <= (moment or day).year <= _YEARS[1]:
        raise MemoryOperationError(f"time {str(value)!r} is outside the years {_YEARS[0]}-{_YEARS[1]}")
    if moment is not None:
        return (moment if moment.tzinfo else moment.replace(tzinfo=tz)).astimezone(UTC)
    if end:
        day = day + timedelta(days=1)  # a date-only upper bound includes that whole day
    return datetime(day.year, day.month, day.day, tzinfo=tz).astimezone(UTC)


def superseded(store: TypedMemoryStore, tenants: list[str]) -> dict[str, dict]:
    """Memory id -> the record of the later statement that replaced it, as consolidation stored it
    (``timeline/records.py``): a moved plan, an old address, a corrected number."""
    from memory_pipeline.recall.timeline import RECORD_COLUMNS

    records = read_tenants(store.uri, SUPERSESSIONS, tenants, RECORD_COLUMNS)
    return {r["old_ref"].removeprefix("facts/"): r for r in records.iter_rows(named=True)
            if r["old_ref"].startswith("facts/")}


def memory_frame(store: TypedMemoryStore, tenants: str | list[str], vectors: bool = False) -> pl.DataFrame:
    """Every typed memory of ``tenants``, read as recall reads them (``recall.index.kept_reads``):
    a new process reads a small tenant's back from the file kept at the table's version, without
    LanceDB."""
    return read_tenants(store.uri, MEMORIES, tenants, [c for c in MEMORIES.names if vectors or c != "vector"])


def labelled(row: dict, gone: dict[str, dict]) -> dict:
    """A memory as shown, with ``superseded`` ({"by", "at"}) when a later statement replaced it."""
    out = public(row)
    record = gone.get(row["id"])
    out["superseded"] = {"by": record["new_ref"], "at": f"{record['new_said_at']:%Y-%m-%d}"} if record else None
    return out


def query_memories(
    store: TypedMemoryStore,
    scope: ReadScope,
    *,
    memory_type: str | list[str] | None = None,
    happens_within: str | None = None,
    occurred_from: str | datetime | date | None = None,
    occurred_to: str | datetime | date | None = None,
    sort_by: str = "recent",
    max_results: int = 10,
    now: datetime | None = None,
    tz: ZoneInfo | None = None,
    include_superseded: bool | None = None,
) -> list[dict]:
    """Memories matching typed filters, sorted, at most ``max_results``.

    Memories a later statement replaced (a moved plan, an old address) are left out, unless
    ``include_superseded``: then they are kept and carry ``superseded`` (by what, from when).
    """
    import polars as pl

    tz = tz or ZoneInfo("UTC")
    now = (now or now_utc()).astimezone(UTC)
    if sort_by not in SORTS:
        raise MemoryOperationError(f"sort_by {sort_by!r}: use one of {', '.join(SORTS)}")
    if not isinstance(max_results, int) or not 1 <= max_results <= MAX_RESULTS:
        raise MemoryOperationError(f"max_results must be an integer from 1 to {MAX_RESULTS}, got {max_results!r}")
    types = [memory_type] if isinstance(memory_type, str) else list(memory_type or [])
    types = [check_type(t) for t in types]
    start = parse_bound(occurred_from, tz)
    stop = parse_bound(occurred_to, tz, end=True)
    horizon = now + parse_duration(happens_within) if happens_within else None
    for tenants in (scope.primary, scope.fallback):
        if not tenants:
            continue
        frame = memory_frame(store, tenants)
        if types:
            frame = frame.filter(pl.col("memory_type").is_in(types))
        gone = superseded(store, tenants) if frame.height else {}
        if gone and not include_superseded:
            frame = frame.filter(~pl.col("id").is_in(list(gone)))
        if frame.height:
            frame = _filter(frame, now, start, stop, horizon)
        if frame.height:
            return [labelled(r, gone) for r in _sort(frame, sort_by).head(max_results).iter_rows(named=True)]
    return []


def _filter(frame: pl.DataFrame, now, start, stop, horizon) -> pl.DataFrame:
    import polars as pl

    if start is not None:
        frame = frame.filter(pl.col("occurred_at") >= start)
    if stop is not None:
        frame = frame.filter(pl.col("occurred_at") < stop)
    if horizon is not None:
        frame = frame.filter((pl.col("happens_at") >= now) & (pl.col("happens_at") <= horizon))
    return frame


def _sort(frame: pl.DataFrame, sort_by: str) -> pl.DataFrame:
    if sort_by == "scheduled":
        return frame.sort(["happens_at", "confidence"], descending=[False, True], nulls_last=True)
    if sort_by == "confidence":
        return frame.sort(["confidence", "updated_at"], descending=[True, True], nulls_last=True)
    # Dated statements newest first, then undated ones (profile lines) by when they were stored.
    return frame.sort(["occurred_at", "created_at"], descending=True, nulls_last=True)


def recall_memories(
    store: TypedMemoryStore,
    embedder: Embedder,
    query: str,
    agent: str,
    user: str | None,
    settings: Settings,
    *,
    memory_type: str | None = None,
    k: int = 6,
    min_score: float | None = None,
) -> list[dict]:
    """Typed memories for ``query`` as full rows, ranked as every source is: ``recall.search`` over
    the ``facts`` source (the same fusion of cosine and BM25, scopes, boosts and cut-offs)."""
    if not query or not query.strip():
        raise MemoryOperationError("query must be a non-empty string")
    if not 1 <= k <= MAX_RESULTS:
        raise MemoryOperationError(f"k must be from 1 to {MAX_RESULTS}, got {k}")
    types = {check_type(memory_type)} if memory_type else None
    try:
        hits = search(
            query, agent, user, sources=[FACTS], k=MAX_RESULTS if types else k, min_score=min_score,
            store=store, embedder=embedder, settings=settings,
        )
    except NoIndexError:  # neither typed memories nor an L0 index yet
        return []
    import polars as pl

    cache = tenant_cache(store.uri)
    rows: dict[tuple[str, str], dict] = {}
    for tenant in {h.tenant for h in hits}:
        ids = [h.ids[0] for h in hits if h.tenant == tenant]
        if len(cache.rows(FACTS, tenant) or ()) < cache.kept_below:
            found = memory_frame(store, tenant, vectors=True).filter(pl.col("id").is_in(ids))
        else:  # a read of the whole tenant is neither kept nor held: its hits, by id
            found = store.memory_rows(tenant, sql_in("id", ids), vectors=True)
        for row in found.iter_rows(named=True):
            rows[(tenant, row["id"])] = row
    out = []
    for hit in hits:
        row = rows.get((hit.tenant, hit.ids[0]))
        if row is None or (types and row["memory_type"] not in types):
            continue
        item = public(row)
        item["score"] = round(hit.score, 4)
        item["parts"] = {"vector": round(hit.parts["vector"], 4), "text": round(hit.parts["text"], 4)}
        item["when"], item["superseded"] = hit.when, hit.superseded
        out.append(item)
        if len(out) == k:
            break
    return out
