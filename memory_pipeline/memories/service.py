"""One reader's view of the typed memories: the agent and user it serves, its scopes, timezone,
and whether it may write. The CLI and the MCP server both go through it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from memory_pipeline.config import Settings, get_settings
from memory_pipeline.embedding import EMBEDDER_IDENTITY, Embedder, make_embedder
from memory_pipeline.memories import bulletin as bulletins
from memory_pipeline.memories.operations import MemoryOperationError, ReadOnlyError, TypedMemories, public
from memory_pipeline.memories.query import (
    ReadScope,
    own_scope,
    parse_bound,
    parse_duration,
    query_memories,
    read_scope,
    recall_memories,
)
from memory_pipeline.memories.store import TypedMemoryStore, now_utc
from memory_pipeline.recall.scope import is_read_only, recall_scopes
from memory_pipeline.tenancy import GLOBAL_USER, Tenant, profile_files, tenant_tz, validate_id

if TYPE_CHECKING:
    from memory_pipeline.memories.working import WorkingMemory


@dataclass
class MemoryService:
    agent: str
    user: str = GLOBAL_USER
    settings: Settings = field(default_factory=get_settings)
    read_only: bool = False
    actor: str = "cli"
    embedder: Embedder | None = None

    def __post_init__(self) -> None:
        validate_id(self.agent, "agent id")
        validate_id(self.user, "user id")
        # A team member never writes, whatever it was started with.
        self.team_member = is_read_only(self.agent, self.settings)
        self.read_only = self.read_only or self.team_member

    @property
    def tenant(self) -> Tenant:
        return Tenant(self.agent, self.user)

    @cached_property
    def tz(self) -> ZoneInfo:
        return tenant_tz(self.settings.root, self.tenant)

    @cached_property
    def scope(self) -> ReadScope:
        return read_scope(self.agent, self.user, self.settings)

    @cached_property
    def own(self) -> ReadScope:
        return own_scope(self.agent, self.user, self.settings)

    @cached_property
    def store(self) -> TypedMemoryStore:
        dim = self.embedder.dim if self.embedder else EMBEDDER_IDENTITY[self.settings.embedder][1]
        return TypedMemoryStore(self.settings.lancedb_uri, dim)

    def get_embedder(self) -> Embedder:
        """The embedder, made without opening the store: a search needs only its query vectors
        (and the model itself only once a memory is written)."""
        if self.embedder is None:
            self.embedder = make_embedder(self.settings.embedder, self.settings.embed_batch_size)
        return self.embedder

    @cached_property
    def typed(self) -> TypedMemories:
        return TypedMemories(self.store, self.get_embedder())

    def _writable(self) -> None:
        if self.team_member:
            raise ReadOnlyError()  # "memory is read-only for team members"
        if self.read_only:
            raise ReadOnlyError("this memory is read-only here (started with --read-only): nothing was written")

    def time(self, value: str | None, what: str) -> datetime | None:
        if value is None or value == "":
            return None
        try:
            return parse_bound(value, self.tz)
        except MemoryOperationError as exc:
            raise MemoryOperationError(f"{what}: {exc}") from None

    # -- reads ----------------------------------------------------------------------------
    def recall(self, query: str, memory_type: str | None = None, k: int = 6, min_score: float | None = None) -> list[dict]:
        return recall_memories(
            self.store, self.get_embedder(), query, self.agent, self.user, self.settings,
            memory_type=memory_type, k=k, min_score=min_score,
        )

    def query(self, **filters) -> list[dict]:
        return query_memories(self.store, self.scope, tz=self.tz, **filters)

    def knowledge(self, entity: str, as_of: str | None = None, include_history: bool = False) -> dict:
        from memory_pipeline.knowledge.search import KnowledgeQueryError, knowledge_graph_search

        try:
            return knowledge_graph_search(
                self.store, entity, (self.scope.primary, self.scope.fallback), as_of=self.time(as_of, "as_of"),
                tz=self.tz, include_history=include_history, show_memory=public,
            )
        except KnowledgeQueryError as exc:
            raise MemoryOperationError(str(exc)) from None

    def bulletin(self, kind: str = "memory", per_section: int = 5, now: datetime | None = None) -> str:
        """A Markdown bulletin for a system prompt (``memories/bulletin.py``), kept on disk as the
        working memory is."""
        def make(at: datetime):
            text, until = bulletins.made_bulletin(self.store, self.own, kind, per_section=per_section, now=at, tz=self.tz)
            return {"markdown": text}, until

        if kind not in bulletins.KINDS:  # refused, with the reason, by the bulletin itself
            return make(now)[0]["markdown"]
        return self._kept(f"bulletin-{kind}", {"per_section": per_section}, now, make)["markdown"]

    def context(self, token_budget: int | None = None, max_recent: int | None = None,
                now: datetime | None = None) -> WorkingMemory:
        """The working memory to load into the prompt every cycle (``memories/working.py``); at most
        ``max_recent`` recent entries (default ``working.MAX_RECENT``). The last one made is kept
        on disk while nothing it is made of changes (``memories/context_file.py``)."""
        from memory_pipeline.memories import working

        budget = self.settings.recall.context_token_budget if token_budget is None else token_budget
        recent = working.MAX_RECENT if max_recent is None else max_recent

        def make(at: datetime):
            found = self._working_memory(budget, recent, at)
            return found.to_dict(), found.valid_until

        found = working.WorkingMemory.from_dict(self._kept("working", {"budget": budget, "recent": recent}, now, make))
        self._record_context(found)
        return found

    def _kept(self, name: str, asked: dict, now: datetime | None, make) -> dict:
        """Section ``name`` as ``make(now)`` makes it (with when it next reads differently), or as
        it was kept on disk if nothing it is made of changed since (``memories/context_file.py``)."""
        from memory_pipeline.memories import context_file

        now = (now or now_utc()).astimezone(UTC)
        uri, tenant = self.settings.lancedb_uri, self.tenant
        scopes = [scope.key for scope in recall_scopes(self.agent, self.user, self.settings)]
        made_from = context_file.fingerprint(uri, profile_files(self.settings.root, tenant), {**asked, "scopes": scopes})
        kept = context_file.read(uri, tenant.key, made_from, now, name)
        if kept is None:
            kept, valid_until = make(now)
            context_file.keep(uri, tenant.key, made_from, now, kept, valid_until, name)
        return kept

    def _working_memory(self, budget: int, recent: int, now: datetime) -> WorkingMemory:
        from memory_pipeline.memories import working
        from memory_pipeline.recall.index.kept_reads import read_tenants
        from memory_pipeline.store.tables import EPISODES

        episodes = read_tenants(self.settings.lancedb_uri, EPISODES, self.tenant.key)
        return working.working_memory(
            self.store, self.own, title=f"{self.agent}/{self.user}", token_budget=budget, max_recent=recent,
            tiers=self._tiers(), now=now, tz=self.tz, episodes=episodes,
        )

    def _tiers(self) -> dict[str, str]:
        """Memory id -> activation tier of this reader's own typed memories (``activation/``),
        read through recall's tenant cache; empty before the first nightly activation run."""
        from memory_pipeline.activation.ranking import activation_of
        from memory_pipeline.recall.sources import tenant_cache

        known = activation_of(tenant_cache(self.settings.lancedb_uri), [self.tenant.key])
        return {row_id: tier for (_, row_id), (_, tier) in known.items()}

    def _record_context(self, found) -> None:
        """The typed memories the working memory handed out, in the access log (returned)."""
        from memory_pipeline.activation.access_log import Access, record_access

        if self.team_member:  # it reads its leader's ids
            return
        shown = [Access(self.tenant.key, item.citation, (item.citation.removeprefix("facts/"),))
                 for item in found.items if item.citation.startswith("facts/")]
        record_access(self.settings.lancedb_uri, "context", returned=shown)

    def audit(self, op: list[str] | None = None, memory_type: list[str] | None = None, since: str | None = None,
              until: str | None = None, limit: int = 50, now: datetime | None = None) -> list[dict]:
        """The audit log of this user's memory, newest first. ``since``: a span back from ``now``
        (7d, 12h, 2w) or an ISO date or time (local); ``until``: an ISO date (that day included) or time."""
        from memory_pipeline.memories.stats import audit_entries

        return audit_entries(
            self.store, self.own.primary[:1], ops=op, memory_types=memory_type,
            since=self._since(since, now), until=self._bound(until, "until", end=True), limit=limit,
        )

    def _bound(self, value: str | None, what: str, end: bool = False) -> datetime | None:
        try:
            return parse_bound(value, self.tz, end=end)
        except MemoryOperationError as exc:
            raise MemoryOperationError(f"{what}: {exc}") from None

    def _since(self, value: str | None, now: datetime | None) -> datetime | None:
        try:
            if value and value.strip()[:1].isdigit() and value.strip()[-1:].lower() in ("m", "h", "d", "w"):
                return (now or now_utc()) - parse_duration(value)
            return parse_bound(value, self.tz)
        except MemoryOperationError:
            from memory_pipeline.text.scrub import scrub_secrets

            shown = scrub_secrets(str(value)[:100]).text
            raise MemoryOperationError(f"since {shown!r}: use a span back from now (90m, 12h, 7d, 2w) or an ISO "
                                       "date or time (2026-11-10, 2026-11-10T09:30)") from None

    def stats(self) -> dict:
        from memory_pipeline.memories.stats import typed_memory_stats

        return typed_memory_stats(self.store, self.scope.primary[:1] + self.scope.fallback[:1])

    # -- writes ---------------------------------------------------------------------------
    def store_memory(self, memory_type: str, content: str, reasoning: str | None = None,
                     happens_at: str | None = None, occurred_at: str | None = None,
                     confidence: float | None = None) -> dict:
        self._writable()
        return self.typed.store_memory(
            self.tenant, memory_type, content, reasoning=reasoning, happens_at=self.time(happens_at, "happens_at"),
            occurred_at=self.time(occurred_at, "occurred_at"), confidence=confidence, actor=self.actor,
        )

    def update_memory(self, memory_id: str, reason: str | None = None, **changes) -> dict:
        self._writable()
        for key in ("happens_at", "occurred_at"):
            if isinstance(changes.get(key), str):
                changes[key] = self.time(changes[key], key)
        return self.typed.update_memory(self.tenant, _mid(memory_id), reason=reason, actor=self.actor, **changes)

    def forget_memory(self, memory_id: str, reason: str) -> dict:
        self._writable()
        return self.typed.forget_memory(self.tenant, _mid(memory_id), reason, actor=self.actor)

    def skip_memory(self, content: str, reason: str, memory_type: str = "observation") -> dict:
        self._writable()
        return self.typed.skip_memory(self.tenant, content, reason, memory_type, actor=self.actor)


def _mid(value: str) -> str:
    if not isinstance(value, str) or not value.startswith("m_") or len(value) != 26 or not value[2:].isalnum():
        from memory_pipeline.text.scrub import scrub_secrets

        shown = scrub_secrets(str(value)[:100]).text  # an error reaches logs and MCP clients
        raise MemoryOperationError(f"memory_id {shown!r} is not a memory id (m_ and 24 hex digits, as queries return)")
    return value
