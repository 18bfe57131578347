"""The memory as MCP tools, over stdio: ``memory-pipeline mcp --agent A --user U [--read-only]``.

One server serves one agent and one user: every tool reads the scopes that (agent, user) may read
(its user, its agent-wide memory, its team leader's as a fallback) and writes only its own user's
memory. A team member's server is read-only and answers a write with "memory is read-only for team
members". Tools check their arguments and answer bad input with an error result that says what
was wrong; nothing a tool raises reaches the client as a traceback.

Also runnable as ``python -m memory_pipeline.mcp_server --agent A --user U``. Logs go to stderr:
stdout carries only MCP messages.
"""

import argparse
import functools
import logging
import os
import sys
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import Field

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from memory_pipeline.memories.bulletin import KINDS  # noqa: E402
from memory_pipeline.memories.query import SORTS  # noqa: E402
from memory_pipeline.memories.store import MEMORY_TYPES  # noqa: E402
from memory_pipeline.mcp_tools import (  # noqa: E402
    MAX_RESULT_CHARS,
    MEMORY_KEYS,
    SEARCH_KEYS,
    capped_list,
    capped_text,
    compact,
    dump,
    make_tool,
    without_server_paths,
)

log = logging.getLogger("memory_pipeline.mcp")

SERVER_NAME = "memory-pipeline"
WRITE_TOOLS = ("memory_graph_store", "memory_graph_update", "memory_graph_forget", "memory_graph_skip")
RECALL_SOURCES = ("memory", "sessions", "episodes", "facts")

# Closed sets as enums and numbers with bounds, so the schema tells the model what it may send.
MemoryType = Literal[MEMORY_TYPES]
Sort = Literal[SORTS]
BulletinKind = Literal[KINDS]
Source = Literal[RECALL_SOURCES]
Query = Annotated[str, Field(min_length=1, max_length=2000, description="What to look for, in plain words.")]
Limit = Annotated[int, Field(ge=1, le=50, description="Most results to return (1-50).")]
MinScore = Annotated[float | None, Field(ge=0, le=1, description="Drop results scoring below this (0-1; default 0.35).")]
Debug = Annotated[bool, Field(description="Also return the scoring parts, ids, tenant and turn ids of each result.")]
When = Annotated[str | None, Field(max_length=40, description="ISO-8601 date or time in the user's timezone, e.g. 2026-12-05 or 2026-12-05T14:00.")]
MemoryId = Annotated[str, Field(min_length=1, max_length=40, description="A memory id (m_ and 24 hex digits), as recall and queries return it.")]
Reason = Annotated[str, Field(min_length=1, max_length=500, description="Why; kept in the audit log.")]
Confidence = Annotated[float | None, Field(ge=0, le=1, description="How sure, 0 to 1 (default 0.8).")]


def _expected_errors() -> tuple[type[BaseException], ...]:
    from memory_pipeline.memories.operations import MemoryOperationError, ReadOnlyError
    from memory_pipeline.recall.get import AccessDeniedError, GetError
    from memory_pipeline.recall.search import RecallError
    from memory_pipeline.tenancy import InvalidTenantError

    return (MemoryOperationError, ReadOnlyError, GetError, AccessDeniedError, RecallError, InvalidTenantError)


def build_server(agent: str, user: str, read_only: bool = False, settings=None):
    """The MCP server of one (agent, user): thirteen tools over its memory."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp_types import ToolAnnotations

    from memory_pipeline.memories.service import MemoryService


    service = MemoryService(agent, user, read_only=read_only, actor="mcp", **({"settings": settings} if settings else {}))
    expected = _expected_errors()
    from memory_pipeline.activation.access_log import Access, record_access
    mode = "read-only" if service.read_only else "read-write"

    def guarded(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def call(**kwargs: Any) -> Any:
            try:
                return fn(**kwargs)
            except expected as exc:
                raise ToolError(without_server_paths(str(exc), service.settings)) from None
            except ToolError:
                raise
            except Exception as exc:  # never a traceback to the client; the log keeps it
                log.exception("tool %s failed", name)
                raise ToolError(without_server_paths(f"{name} failed: {type(exc).__name__}: {exc}", service.settings)) from None

        return call

    def memory_search(
        query: Query,
        limit: Limit = 6,
        min_score: MinScore = None,
        sources: Annotated[list[Source] | None, Field(description="Only these sources: memory (notes), sessions (transcripts), episodes (session summaries), facts (typed memories); default all.")] = None,
        now: Annotated[str | None, Field(max_length=40, description="When the question is asked (ISO-8601; default now): 'last month' and 'two weeks ago' count from it.")] = None,
        debug: Debug = False,
    ) -> dict[str, Any]:
        """Hybrid search (vector + full text) of this user's notes, past sessions, episodes and typed
        memories, best first. Each result: citation (path#Lstart-Lend, or facts/<id>, episodes/<id>),
        date, source, score, snippet. Read more of a result with memory_get(citation)."""
        from memory_pipeline.recall.query import reference_time
        from memory_pipeline.recall.search import search

        if not query.strip():
            raise ToolError("query must hold words, not only spaces")
        try:
            asked_at = reference_time(now) if now else None
        except ValueError as exc:
            raise ToolError(f"now: {exc}") from None
        results = search(query, agent, None if user == "_global" else user, sources=sources, k=limit,
                         min_score=min_score, now=asked_at, settings=service.settings, embedder=service.get_embedder())
        record_access(service.settings.lancedb_uri, "mcp_search", returned=results)
        rows = [{**r.to_dict(), "date": _date(r)} for r in results]
        return capped_list([compact(r, SEARCH_KEYS, debug) for r in rows], limit)

    def memory_get(
        path: Annotated[str, Field(min_length=1, max_length=1000, description="A path relative to the workspace or a citation from memory_search (path#L3-L7, facts/<id>, episodes/<id>).")],
        from_line: Annotated[int | None, Field(ge=1, description="First line to read, 1-based (default: the citation's first line, else 1). Alias: from.")] = None,
        lines: Annotated[int | None, Field(ge=1, le=500, description="How many lines (default: the citation's, else to the end).")] = None,
    ) -> dict[str, Any]:
        """Exact lines of a memory file by its path or a memory_search citation; a typed memory
        (facts/<id>) or an episode (episodes/<id>) returns its whole text."""
        from memory_pipeline.recall.get import get

        got = get(path, from_line, lines, agent=agent, user=user, settings=service.settings)
        record_access(service.settings.lancedb_uri, "mcp_get", used=[got])
        found = got.to_dict()
        text = capped_text(found["text"])
        return {**found, "text": text, "truncated": text != found["text"]}

    def memory_graph_recall(
        query: Query,
        memory_type: Annotated[MemoryType | None, Field(description="Only this type of memory.")] = None,
        limit: Limit = 6,
        debug: Debug = False,
    ) -> dict[str, Any]:
        """Typed memories (facts, preferences, events, plans, ...) most related to a question."""
        hits = service.recall(query, memory_type=memory_type, k=limit)
        record_access(service.settings.lancedb_uri, "mcp_graph_recall", returned=[
            Access(h["tenant"], f"facts/{h['id']}", (h["id"],)) for h in hits if h.get("tenant") and h.get("id")])
        return capped_list([compact(h, MEMORY_KEYS, debug) for h in hits], limit)

    def memory_graph_query(
        memory_type: Annotated[MemoryType | None, Field(description="Only this type of memory.")] = None,
        happens_within: Annotated[str | None, Field(max_length=10, description="Scheduled from now within this span: a number and a unit, e.g. 90m, 12h, 7d or 2w.")] = None,
        occurred_from: When = None,
        occurred_to: When = None,
        sort_by: Annotated[Sort, Field(description="scheduled (soonest first), recent (newest first) or confidence.")] = "recent",
        limit: Annotated[int, Field(ge=1, le=100, description="Most memories to return (1-100).")] = 10,
        include_superseded: Annotated[bool, Field(description="Also plans a later statement moved to another date.")] = False,
        debug: Debug = False,
    ) -> dict[str, Any]:
        """Typed memories by filters: type, when they are scheduled (happens_within), when they were
        said (occurred_from / occurred_to; a date is a whole day), in an order. Plans later moved to
        another date are left out unless include_superseded."""
        rows = service.query(
            memory_type=memory_type, happens_within=happens_within, occurred_from=occurred_from,
            occurred_to=occurred_to, sort_by=sort_by, max_results=limit, include_superseded=include_superseded,
        )
        return capped_list([compact(r, MEMORY_KEYS, debug) for r in rows], limit)

    def memory_graph_store(
        memory_type: Annotated[MemoryType, Field(description="What kind of memory this is.")],
        content: Annotated[str, Field(min_length=1, max_length=2000, description="The memory, one self-contained sentence.")],
        reasoning: Annotated[str | None, Field(max_length=1000, description="Why it is worth remembering.")] = None,
        happens_at: Annotated[str | None, Field(max_length=40, description="When it is scheduled, ISO-8601 in the user's timezone (events, todos).")] = None,
        confidence: Confidence = None,
    ) -> dict[str, Any]:
        """Store a typed memory for this user (audited)."""
        return service.store_memory(memory_type, content, reasoning, happens_at, None, confidence)

    def memory_graph_update(
        memory_id: MemoryId,
        reason: Annotated[str | None, Field(max_length=500, description="Why it changed; kept in the audit log.")] = None,
        content: Annotated[str | None, Field(min_length=1, max_length=2000, description="New text.")] = None,
        memory_type: Annotated[MemoryType | None, Field(description="New type.")] = None,
        reasoning: Annotated[str | None, Field(max_length=1000, description="New reasoning.")] = None,
        happens_at: Annotated[str | None, Field(max_length=40, description="New scheduled time, ISO-8601 in the user's timezone.")] = None,
        confidence: Confidence = None,
    ) -> dict[str, Any]:
        """Change fields of a memory by id (audited with the fields changed and the reason)."""
        return service.update_memory(
            memory_id, reason=reason, content=content, memory_type=memory_type, reasoning=reasoning,
            happens_at=happens_at, confidence=confidence,
        )

    def memory_graph_forget(memory_id: MemoryId, reason: Reason) -> dict[str, Any]:
        """Forget a memory: its content is removed from every table and index; the audit keeps id,
        reason and time."""
        return service.forget_memory(memory_id, reason)

    def memory_graph_skip(
        content: Annotated[str, Field(min_length=1, max_length=2000, description="What not to remember.")],
        reason: Reason,
        memory_type: Annotated[MemoryType, Field(description="The type it would have had.")] = "observation",
    ) -> dict[str, Any]:
        """Record a decision not to store something; it will not be extracted later either."""
        return service.skip_memory(content, reason, memory_type)

    def knowledge_graph_search(
        entity: Annotated[str, Field(min_length=1, max_length=200, description="A person, place, organisation or project, by name.")],
        as_of: Annotated[str | None, Field(max_length=40, description="Relations valid at this time (ISO-8601; default now).")] = None,
        include_history: Annotated[bool, Field(description="Also relations no longer valid.")] = False,
        limit: Annotated[int, Field(ge=1, le=50, description="Most relations and most memories to return (1-50).")] = 10,
    ) -> dict[str, Any]:
        """An entity: its relations valid now (or as of a time), its neighbours, and the typed
        memories that name it."""
        found = service.knowledge(entity, as_of=as_of, include_history=include_history)
        out = {**found, "relations": found["relations"][:limit], "neighbours": found["neighbours"][:limit],
               "memories": [compact(m, MEMORY_KEYS, False) for m in found["memories"][:limit]]}
        while len(dump(out)) > MAX_RESULT_CHARS and (out["memories"] or out["relations"]):
            out["memories" if out["memories"] else "relations"].pop()
        out["truncated"] = any(len(out[k]) < len(found[k]) for k in ("relations", "neighbours", "memories"))
        return out

    def memory_bulletin(
        kind: Annotated[BulletinKind, Field(description="memory: identity, goals, preferences, recent events and decisions; context: pending todos and time-sensitive items.")] = "memory",
        per_section: Annotated[int, Field(ge=1, le=20, description="Most items per section (1-20).")] = 5,
    ) -> str:
        """A Markdown bulletin of this user's memory, for a system prompt."""
        return capped_text(service.bulletin(kind, per_section=per_section))

    def memory_context(
        token_budget: Annotated[int | None, Field(ge=50, le=3000, description="Most tokens it may take (50-3000; default 1500).")] = None,
    ) -> str:
        """Working memory: what to load into the prompt every cycle, before any search. This user's
        identity and preferences, goals and decisions, pending todos, items due in the next 30 days,
        the most recent current entries and last sessions; each dated and cited (facts/<id>,
        episodes/<id>), superseded items left out, the same text for the same memory."""
        return capped_text(service.context(token_budget=token_budget).markdown)

    # -- drill-down: what a unit was built from, and a bounded regular expression over the sources --
    def memory_expand(
        citation: Annotated[str, Field(min_length=1, max_length=1000, description="A citation: path#Lstart-Lend (a dreamed line, a session window), facts/<id>, episodes/<id> or relations/<id>.")],
        depth: Annotated[int, Field(ge=1, le=5, description="Levels of sources to return (1-5).")] = 1,
        all_levels: Annotated[bool, Field(description="Every level, down to the turns and note lines (overrides depth).")] = False,
    ) -> dict[str, Any]:
        """What a unit of memory was built from, with citations and dates: a dreamed line -> its
        episodes -> the turns it cites; an episode -> its turns; a typed memory or relation -> the
        turn or note line it was read from. Read more around a source with memory_get."""
        from memory_pipeline.recall.expand import expand

        unit = expand(citation, agent=agent, user=user, depth=None if all_levels else depth, settings=service.settings)
        out = unit.to_dict()
        text = capped_text(dump(out))
        return out if text == dump(out) else {"citation": unit.citation, "kind": unit.kind, "text": unit.text,
                                              "when": unit.when, "truncated": True,
                                              "note": "too long: ask with a smaller depth, or expand a source"}

    def memory_grep(
        pattern: Annotated[str, Field(min_length=1, max_length=300, description="A regular expression, e.g. 'Porto|Lisbon'.")],
        ignore_case: Annotated[bool, Field(description="Match regardless of case.")] = False,
        limit: Annotated[int, Field(ge=1, le=200, description="Most matching lines to return (1-200).")] = 20,
    ) -> dict[str, Any]:
        """Every line of this user's past sessions (turn by turn) and notes that a regular expression
        matches, with citation and date; bounded in time (a pathological pattern is refused)."""
        from memory_pipeline.recall.grep import grep

        found = grep(pattern, agent=agent, user=user, ignore_case=ignore_case, limit=limit, settings=service.settings)
        return capped_list([m.to_dict() for m in found.matches], limit, files_searched=found.files_searched)

    drilldown_tools = (memory_expand, memory_grep)

    aliases = {"memory_get": {"from": "from_line"}, "memory_search": {"k": "limit"},
               "memory_graph_recall": {"k": "limit"}, "memory_graph_query": {"max_results": "limit"}}
    tools = [
        make_tool(
            guarded(fn.__name__, fn), name=fn.__name__, description=fn.__doc__, aliases=aliases.get(fn.__name__),
            annotations=ToolAnnotations(readOnlyHint=fn.__name__ not in WRITE_TOOLS,
                                        destructiveHint=fn.__name__ == "memory_graph_forget"),
            structured_output=fn.__name__ not in ("memory_bulletin", "memory_context"),
        )
        for fn in (memory_search, memory_get, memory_graph_recall, memory_graph_query, memory_graph_store,
                   memory_graph_update, memory_graph_forget, memory_graph_skip, knowledge_graph_search, memory_bulletin,
                   memory_context, *drilldown_tools)
    ]
    return MCPServer(
        SERVER_NAME,
        instructions=(
            f"Long-term memory of agent {agent!r} for user {user!r} ({mode}). Use memory_search for "
            "notes and past sessions, memory_graph_recall / memory_graph_query for typed memories, "
            "knowledge_graph_search for people, places and organisations, memory_bulletin for a summary, "
            "memory_context for the working memory to load every cycle."
        ),
        tools=tools,
    )


def _date(result) -> str | None:
    """When a search result was said or written, if recall knows it (``SearchResult.when``)."""
    value = getattr(result, "when", None)
    return value.isoformat() if hasattr(value, "isoformat") else value


def serve(agent: str, user: str, read_only: bool = False) -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    build_server(agent, user, read_only).run("stdio")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m memory_pipeline.mcp_server", description=__doc__.splitlines()[0])
    parser.add_argument("--agent", required=True)
    parser.add_argument("--user", default="_global")
    parser.add_argument("--read-only", action="store_true")
    args = parser.parse_args(argv)
    from memory_pipeline.config import get_settings
    from memory_pipeline.tenancy import known_tenant

    settings = get_settings()
    try:
        tenant = known_tenant(settings.root, args.agent, args.user, settings.teams)
    except ValueError as exc:  # a malformed or unknown agent or user: one line, exit 2
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    serve(tenant.agent_id, tenant.user_id, args.read_only)


if __name__ == "__main__":
    main()
