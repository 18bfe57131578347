"""Working memory: the section an agent loads into its prompt every cycle, before any search.

It is the agent's top of mind about one user, made from the typed memories and the episodes that
exist (nothing is recomputed): who the user is and what they prefer, their goals and decisions,
pending todos, what is due in the next 30 days, the most recent current entries and the last
sessions. Every item carries its date and a citation (``facts/<id>``, ``episodes/<id>``) that
``memory get`` opens and ``memory update`` takes.

Rules, all tested:
- As known at ``now``: what was said after it (a past ``now``) is left out, sessions completed
  after it too.
- Current only: what a later statement replaced (consolidation's supersession records, which
  typed memories read from a replaced statement inherit) is left out, as are todos and goals whose
  date has passed; a recent session holding a replaced statement is marked with the day it was.
- Deduplicated: a content said twice (or under two types, or in other words naming the same time:
  ``bulletin.same_item``) appears once, in its first section.
- Within ``token_budget`` tokens (the embedding model's WordPiece tokenizer; an LLM's BPE counts
  a little fewer on this kind of text), items are kept in priority order until the first that does
  not fit: identity and preferences (the profile a person wrote, undated MEMORY.md lines in the
  file's order, before what was said, newest first), todos, due items, goals and decisions, then
  the recent entries and sessions, newest first. Each section still reads newest first: what was
  said lately comes before the profile, which a later statement may have made stale.
- What gets used stays top of mind: among the current entries, those recall handed out and the
  agent used lately (activation tier ``hot``, then ``warm``: ``activation/decay.py``) are chosen
  for the recent section before newer unused ones; the section still reads newest first. Tiers
  move only when the nightly activation run does.
- Stable: the same memory gives byte-identical text (no clock time in it, every sort ends on the
  id), and the sections run from the least to the most changing, so a prompt cache keeps hitting
  on the prefix when only recent entries move.
- Kept: the last one made is kept on disk until a table it is made of changes or a dated item
  enters or leaves a section (``valid_until``; ``context_file.py``), so an agent loading it every
  cycle from a new process reads no table and imports no LanceDB.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from memory_pipeline.memories.bulletin import TIME_SENSITIVE_DAYS, current_memories, distinct, next_change, when_text
from memory_pipeline.memories.operations import MemoryOperationError
from memory_pipeline.memories.query import ReadScope
from memory_pipeline.memories.recall_source import said_at
from memory_pipeline.memories.store import TypedMemoryStore, now_utc
from memory_pipeline.recall.get import parse_citation

if TYPE_CHECKING:  # imported where a frame is read: a kept working memory needs none (``context_file``)
    import polars as pl

DEFAULT_TOKEN_BUDGET = 1500
MAX_RECENT = 30
MAX_SESSIONS = 3
MIN_TOKEN_BUDGET = 50

# (key, heading), in the order they are printed: least changing first.
SECTIONS = (
    ("identity", "Identity and preferences"),
    ("goals", "Goals and decisions"),
    ("todos", "Pending todos"),
    ("soon", f"Time-sensitive (next {TIME_SENSITIVE_DAYS} days)"),
    ("recent", "Recent"),
    ("sessions", "Recent sessions"),
)
# The order items are kept in when the budget is short.
PRIORITY = ("identity", "todos", "soon", "goals", "recent", "sessions")


@dataclass(frozen=True)
class ContextItem:
    section: str
    citation: str
    memory_type: str
    content: str
    said: str
    """When it was said or written (the tenant's local date, with the time when it has one)."""
    due: str | None = None
    """When it is scheduled, for todos, goals and time-sensitive items."""
    source_ref: str | None = None
    tier: str | None = None
    """hot | warm | cool for a typed memory recall has handed out (activation), else None."""
    superseded: str | None = None
    """For a session: the day a later statement replaced one it holds (its summary may restate it)."""

    def line(self) -> str:
        when = ", ".join(p for p in (f"due {self.due}" if self.due else "", self.said) if p)
        later = f"; holds a statement superseded {self.superseded}" if self.superseded else ""
        return f"- {self.content} ({when + '; ' if when else ''}{self.citation}{later})"


@dataclass
class WorkingMemory:
    tenant: str
    markdown: str
    items: list[ContextItem] = field(default_factory=list)
    tokens: int = 0
    token_budget: int = DEFAULT_TOKEN_BUDGET
    left_out: int = 0
    """Current items that did not fit the budget."""
    valid_until: datetime | None = None
    """The first instant after it was made at which a dated item enters or leaves a section (a
    goal or todo falls due, an item comes within the time-sensitive days); None: no such instant."""

    def to_dict(self) -> dict:
        return {"tenant": self.tenant, "tokens": self.tokens, "token_budget": self.token_budget,
                "left_out": self.left_out, "items": [asdict(i) for i in self.items], "markdown": self.markdown}

    @classmethod
    def from_dict(cls, data: dict) -> WorkingMemory:
        """The working memory ``to_dict`` gave (``valid_until`` is not in it)."""
        return cls(data["tenant"], data["markdown"], [ContextItem(**item) for item in data["items"]],
                   data["tokens"], data["token_budget"], data["left_out"])


@lru_cache(maxsize=1)
def _tokenizer():
    # The tokenizer file alone (the `tokenizers` package, no PyTorch): ~0.2 s, once per process.
    from tokenizers import Tokenizer

    from memory_pipeline.embedding import minilm_path

    tokenizer = Tokenizer.from_file(f"{minilm_path()}/tokenizer.json")
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


def count_tokens(text: str) -> int:
    """Tokens of ``text`` for the model (WordPiece splits at whitespace, so lines add up)."""
    return len(_tokenizer().encode(text, add_special_tokens=False).ids) if text.strip() else 0


def working_memory(
    store: TypedMemoryStore,
    scope: ReadScope,
    *,
    title: str,
    token_budget: int = DEFAULT_TOKEN_BUDGET,
    max_recent: int = MAX_RECENT,
    now: datetime | None = None,
    tz: ZoneInfo | None = None,
    episodes: pl.DataFrame | None = None,
    tiers: dict[str, str] | None = None,
) -> WorkingMemory:
    """The working memory of the reader ``scope`` (``episodes``: its tenant's, to name the last
    sessions; ``tiers``: memory id -> activation tier)."""
    if not isinstance(token_budget, int) or token_budget < MIN_TOKEN_BUDGET:
        raise MemoryOperationError(f"token_budget must be a whole number of at least {MIN_TOKEN_BUDGET}, got {token_budget!r}")
    if not isinstance(max_recent, int) or not 0 <= max_recent <= MAX_RECENT:
        raise MemoryOperationError(f"max_recent must be from 0 to {MAX_RECENT}, got {max_recent!r}")
    now = (now or now_utc()).astimezone(UTC)
    tz = tz or ZoneInfo("UTC")
    frame, said_next = current_memories(store, scope, now)
    if episodes is not None and episodes.height:
        later = episodes.filter(episodes["completed_at"] > now)["completed_at"].min()
        said_next = min(filter(None, (said_next, later)), default=None)
        episodes = episodes.filter(episodes["completed_at"] <= now)
    sections, keep_order = _sections(frame, now, tz, max_recent, tiers or {})
    sections["sessions"] = _sessions(episodes, tz, _timeline(store, episodes, now))
    header = f"# Working memory: {title}\n"
    kept, used, full = {key: set() for key, _ in SECTIONS}, count_tokens(header), False
    for key in PRIORITY:
        for i in keep_order.get(key, range(len(sections[key]))):
            item = sections[key][i]
            cost = count_tokens(item.line()) + (0 if kept[key] else count_tokens(_heading(key)))
            full = full or used + cost > token_budget  # the first item that does not fit ends the list
            if not full:
                kept[key].add(i)
                used += cost
    left_out = sum(len(items) for items in sections.values()) - sum(len(ids) for ids in kept.values())
    items = [item for key, _ in SECTIONS for i, item in enumerate(sections[key]) if i in kept[key]]
    lines = [header.rstrip("\n")]
    for key, _ in SECTIONS:
        chosen = [item.line() for i, item in enumerate(sections[key]) if i in kept[key]]
        if chosen:
            lines += ["", _heading(key), *chosen]
    markdown = "\n".join(lines) + "\n"
    return WorkingMemory(title, markdown, items, count_tokens(markdown), token_budget, left_out,
                         next_change(frame, now, said_next))


def _heading(key: str) -> str:
    return "## " + dict(SECTIONS)[key]


_TIER_RANK = {"hot": 0, "warm": 1}


def _sections(frame: pl.DataFrame, now: datetime, tz: ZoneInfo, max_recent: int,
              tiers: dict[str, str]) -> tuple[dict[str, list[ContextItem]], dict[str, list[int]]]:
    """Each section's items as shown, and, where it differs, the order they are kept in when the
    budget is spent (item indices)."""
    import polars as pl

    out: dict[str, list[ContextItem]] = {key: [] for key, _ in SECTIONS}
    keep: dict[str, list[int]] = {}
    if not frame.height:
        return out, keep
    seen: list[dict] = []
    horizon = now + timedelta(days=TIME_SENSITIVE_DAYS)
    upcoming = pl.col("happens_at").is_null() | (pl.col("happens_at") >= now)
    newest = (["occurred_at", "created_at", "id"], [True, True, False])
    soonest = (["happens_at", "occurred_at", "id"], [False, True, False])
    picks = (
        ("identity", pl.col("memory_type").is_in(["identity", "preference"]), newest, None),
        ("goals", pl.col("memory_type").is_in(["goal", "decision"]) & upcoming, newest, None),
        ("todos", (pl.col("memory_type") == "todo") & upcoming, soonest, None),
        ("soon", pl.col("happens_at").is_between(now, horizon), soonest, None),
        # Past events stay recent entries; a todo is either pending (above) or done.
        ("recent", pl.col("memory_type") != "todo", newest, max_recent),
    )
    for key, where, (columns, descending), cap in picks:
        rows = list(frame.filter(where).sort(columns, descending=descending, nulls_last=True).iter_rows(named=True))
        if cap is not None and tiers:
            # A capped section is chosen used-first (a stable sort keeps newest first within a tier)...
            order = {row["id"]: i for i, row in enumerate(rows)}
            rows.sort(key=lambda row: _TIER_RANK.get(tiers.get(row["id"], ""), 2))
        chosen = distinct(rows, cap, seen)
        if cap is not None and tiers:
            chosen.sort(key=lambda row: order[row["id"]])  # ...and read newest first
        if key == "identity":
            keep[key] = sorted(range(len(chosen)), key=lambda i: _profile_line(chosen[i], i))
        out[key] = [ContextItem(
            key, f"facts/{row['id']}", row["memory_type"], " ".join(row["content"].split()),
            when_text(said_at(row["occurred_at"], row["created_at"], row.get("source")), tz),
            when_text(row["happens_at"], tz) or None,
            row["source_ref"], tiers.get(row["id"]),
        ) for row in chosen]
    return out, keep


def _profile_line(row: dict, position: int) -> tuple[int, int]:
    """Where an identity item stands when the budget is spent: the profile a person wrote (an
    undated MEMORY.md line, in the file's order) first, then what was said, newest first."""
    if row["occurred_at"] is not None:
        return 1, position
    line = parse_citation(row["source_ref"] or "")[1]
    return 0, position if line is None else line


def _timeline(store: TypedMemoryStore, episodes: pl.DataFrame | None, now: datetime):
    """The supersession records of the episodes' tenant whose new statement was said by ``now``,
    as recall reads them."""
    from memory_pipeline.recall.index.kept_reads import read_tenants
    from memory_pipeline.recall.timeline import RECORD_COLUMNS, TenantTimeline
    from memory_pipeline.store.tables import SUPERSESSIONS

    if episodes is None or not episodes.height:
        return None
    tenants = episodes["tenant"].unique().to_list()
    records = read_tenants(store.uri, SUPERSESSIONS, tenants, RECORD_COLUMNS).to_dicts()
    return TenantTimeline([r for r in records if r["new_said_at"] <= now])


def _sessions(episodes: pl.DataFrame | None, tz: ZoneInfo, timeline=None) -> list[ContextItem]:
    """The last sessions; one holding a statement a later one replaced says so (its summary may
    restate the old value)."""
    if episodes is None or not episodes.height:
        return []
    rows = episodes.sort(["completed_at", "id"], descending=[True, False]).head(MAX_SESSIONS)
    out = []
    for r in rows.iter_rows(named=True):
        record = timeline.record_of(r["path"], r["start_line"], r["end_line"]) if timeline else None
        out.append(ContextItem(
            "sessions", f"episodes/{r['id']}", "episode", " ".join(r["l0_abstract"].split()),
            when_text(r["completed_at"], tz), None, f"{r['path']}#L{r['start_line']}-L{r['end_line']}",
            superseded=f"{record.new_said_at.astimezone(tz):%Y-%m-%d}" if record else None,
        ))
    return out
