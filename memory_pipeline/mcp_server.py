"""The memory as MCP tools, over stdio: ``memory-pipeline mcp --agent A --user U [--read-only]``.

One server serves one agent and one user: every tool reads the scopes that (agent, user) may read
(its user, its agent-wide memory, its team leader's as a fallback) and writes only its own user's
memory. A team member's server is read-only and answers a write with "memory is read-only for team
members". Tools check their arguments and answer bad input with an error result that says what
was wrong; nothing a tool raises reaches the client as a traceback.

Also runnable as ``python -m memory_pipeline.mcp_server --agent A --user U``. Logs go to stderr:
stdout carries only MCP messages.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

log = logging.getLogger("memory_pipeline.mcp")

SERVER_NAME = "memory-pipeline"
WRITE_TOOLS = ("memory_graph_store", "memory_graph_update", "memory_graph_forget", "memory_graph_skip")


def _expected_errors() -> tuple[type[BaseException], ...]:
    from memory_pipeline.memories.operations import MemoryOperationError, ReadOnlyError
    from memory_pipeline.recall.get import AccessDeniedError, GetError
    from memory_pipeline.recall.search import RecallError
    from memory_pipeline.tenancy import InvalidTenantError

    return (MemoryOperationError, ReadOnlyError, GetError, AccessDeniedError, RecallError, InvalidTenantError)


def _dump(value: Any) -> str:
    return json.dumps(value, indent=1, default=str, ensure_ascii=False)


def build_server(agent: str, user: str, read_only: bool = False, settings=None):
    """The MCP server of one (agent, user): ten tools over its memory."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp_types import ToolAnnotations

    from memory_pipeline.memories.service import MemoryService

    service = MemoryService(agent, user, read_only=read_only, actor="mcp", **({"settings": settings} if settings else {}))
    expected = _expected_errors()
    mode = "read-only" if service.read_only else "read-write"
    server = MCPServer(
        SERVER_NAME,
        instructions=(
            f"Long-term memory of agent {agent!r} for user {user!r} ({mode}). Use memory_search for "
            "notes and past sessions, memory_graph_recall / memory_graph_query for typed memories, "
            "knowledge_graph_search for people, places and organisations, memory_bulletin for a summary."
        ),
    )

    def guarded(name: str, fn: Callable[..., str]) -> Callable[..., str]:
        def call(**kwargs: Any) -> str:
            try:
                return fn(**kwargs)
            except expected as exc:
                raise ToolError(str(exc)) from None
            except ToolError:
                raise
            except Exception as exc:  # never a traceback to the client; the log keeps it
                log.exception("tool %s failed", name)
                raise ToolError(f"{name} failed: {type(exc).__name__}: {exc}") from None

        call.__name__ = fn.__name__
        call.__doc__ = fn.__doc__
        call.__signature__ = __import__("inspect").signature(fn)
        call.__annotations__ = fn.__annotations__
        return call

    def memory_search(query: str, k: int = 6, min_score: float | None = None) -> str:
        """Hybrid search (vector + full text) of this user's notes, sessions, episodes and typed memories;
        results carry citations (a typed memory is cited facts/<id>, its text as the snippet)."""
        from memory_pipeline.recall.search import search

        if not query.strip():
            raise ToolError("query must be a non-empty string")
        if not 1 <= k <= 50:
            raise ToolError(f"k must be from 1 to 50, got {k}")
        results = search(query, agent, user, k=k, min_score=min_score, settings=service.settings,
                         embedder=service.graph.embedder)
        return _dump([r.to_dict() for r in results])

    def memory_get(path: str, from_line: int | None = None, lines: int | None = None) -> str:
        """Exact lines of a memory file, by the path or citation memory_search returned; a typed memory
        (facts/<id>) or an episode (episodes/<id>) returns its whole text."""
        from memory_pipeline.recall.get import get

        return _dump(get(path, from_line, lines, agent=agent, user=user, settings=service.settings).to_dict())

    def memory_graph_recall(query: str, memory_type: str | None = None, k: int = 6) -> str:
        """Typed memories most related to a question (hybrid: vector + full text)."""
        return _dump(service.recall(query, memory_type=memory_type, k=k))

    def memory_graph_query(
        memory_type: str | None = None,
        happens_within: str | None = None,
        occurred_from: str | None = None,
        occurred_to: str | None = None,
        sort_by: str = "recent",
        max_results: int = 10,
        include_superseded: bool = False,
    ) -> str:
        """Typed memories by filters: memory_type (identity, preference, fact, event, decision, goal,
        routine, observation, todo, anomaly), happens_within ('7d', '12h': scheduled from now),
        occurred_from / occurred_to (ISO date or time in the user's timezone; a date is a whole day),
        sort_by scheduled | recent | confidence, max_results (1-100). Plans a later statement moved
        to another date are left out of scheduled questions unless include_superseded."""
        return _dump(service.query(
            memory_type=memory_type, happens_within=happens_within, occurred_from=occurred_from,
            occurred_to=occurred_to, sort_by=sort_by, max_results=max_results,
            include_superseded=include_superseded,
        ))

    def memory_graph_store(
        memory_type: str, content: str, reasoning: str | None = None, happens_at: str | None = None,
        confidence: float | None = None,
    ) -> str:
        """Store a typed memory for this user (audited). happens_at: when it is scheduled (ISO)."""
        return _dump(service.store_memory(memory_type, content, reasoning, happens_at, None, confidence))

    def memory_graph_update(
        memory_id: str, reason: str | None = None, content: str | None = None, memory_type: str | None = None,
        reasoning: str | None = None, happens_at: str | None = None, confidence: float | None = None,
    ) -> str:
        """Change fields of a memory by id (audited with the fields changed and the reason)."""
        return _dump(service.update_memory(
            memory_id, reason=reason, content=content, memory_type=memory_type, reasoning=reasoning,
            happens_at=happens_at, confidence=confidence,
        ))

    def memory_graph_forget(memory_id: str, reason: str) -> str:
        """Forget a memory: its content is removed from every table and index; the audit keeps id,
        reason and time."""
        return _dump(service.forget_memory(memory_id, reason))

    def memory_graph_skip(content: str, reason: str, memory_type: str = "observation") -> str:
        """Record a decision not to store something; it will not be extracted later either."""
        return _dump(service.skip_memory(content, reason, memory_type))

    def knowledge_graph_search(entity: str, as_of: str | None = None, include_history: bool = False) -> str:
        """An entity (person, place, organisation, project): its relations valid now or as of a time
        (ISO), its neighbours, and the typed memories that name it."""
        return _dump(service.knowledge(entity, as_of=as_of, include_history=include_history))

    def memory_bulletin(kind: str = "memory", per_section: int = 5) -> str:
        """A Markdown bulletin: 'memory' (identity, goals, preferences, recent events and decisions)
        or 'context' (pending todos and time-sensitive items)."""
        return service.bulletin(kind, per_section=per_section)

    tools = [
        memory_search, memory_get, memory_graph_recall, memory_graph_query, memory_graph_store,
        memory_graph_update, memory_graph_forget, memory_graph_skip, knowledge_graph_search, memory_bulletin,
    ]
    for fn in tools:
        writes = fn.__name__ in WRITE_TOOLS
        server.add_tool(
            guarded(fn.__name__, fn),
            name=fn.__name__,
            description=fn.__doc__,
            annotations=ToolAnnotations(readOnlyHint=not writes, destructiveHint=fn.__name__ == "memory_graph_forget"),
            structured_output=False,
        )
    return server


def serve(agent: str, user: str, read_only: bool = False) -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    build_server(agent, user, read_only).run("stdio")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m memory_pipeline.mcp_server", description=__doc__.splitlines()[0])
    parser.add_argument("--agent", required=True)
    parser.add_argument("--user", default="_global")
    parser.add_argument("--read-only", action="store_true")
    args = parser.parse_args(argv)
    from memory_pipeline.tenancy import InvalidTenantError, validate_id

    try:
        validate_id(args.agent, "agent id")
        validate_id(args.user, "user id")
    except InvalidTenantError as exc:
        parser.error(str(exc))
    serve(args.agent, args.user, args.read_only)


if __name__ == "__main__":
    main()
