"""Memory-graph commands: ``graph ingest|stats|search|query|entity|bulletin`` and
``memory store|update|forget|skip``.

Tables or Markdown for people, ``--json`` for programs; errors say what to do next.
"""

from __future__ import annotations

import json
import time
from contextlib import contextmanager

import typer
from rich.console import Console
from rich.table import Table

console = Console()
err = Console(stderr=True)

graph_app = typer.Typer(no_args_is_help=True, help="Typed memories, graph queries, bulletins and stats.")
memory_app = typer.Typer(no_args_is_help=True, help="Store, update, forget or skip a typed memory (audited).")

AGENT = typer.Option(..., "--agent", "-a", help="Agent id.")
USER = typer.Option("_global", "--user", "-u", help="User id (default: the agent-wide memory).")
JSON = typer.Option(False, "--json", help="Print JSON.")


def _fail(message: str, code: int = 2) -> None:
    err.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(code)


def _service(agent: str, user: str, actor: str = "cli"):
    from memory_pipeline.memories.service import MemoryService
    from memory_pipeline.tenancy import InvalidTenantError

    try:
        return MemoryService(agent, user, actor=actor)
    except (InvalidTenantError, ValueError) as exc:
        _fail(str(exc))


@contextmanager
def _refusals():
    """A refused operation (bad input, unknown id, read-only memory) ends the command with its message."""
    from memory_pipeline.memories.operations import MemoryOperationError, ReadOnlyError
    from memory_pipeline.tenancy import InvalidTenantError

    try:
        yield
    except (MemoryOperationError, ReadOnlyError, InvalidTenantError) as exc:
        _fail(str(exc))


def _print_json(value) -> None:
    print(json.dumps(value, indent=2, default=str, ensure_ascii=False))


def _print_memories(rows: list[dict], title: str, as_json: bool) -> None:
    """Memories found by a search or query: JSON for programs, a table for people."""
    if as_json:
        _print_json(rows)
        return
    if not rows:
        console.print(f"{title}: nothing found")
        return
    table = Table(title=title, show_lines=True)
    for column in ("id", "type", "content", "occurred_at", "happens_at", "conf", "source"):
        table.add_column(column, overflow="fold")
    for r in rows:
        table.add_row(
            r["id"], r["memory_type"], r["content"][:300], (r.get("occurred_at") or "")[:16],
            (r.get("happens_at") or "")[:16], f"{r['confidence']:.2f}", r["source"],
        )
    console.print(table)


@graph_app.command("ingest")
def ingest_command(
    source: str = typer.Option("all", "--source", help="markdown, transcript or all."),
    user: str = typer.Option(None, "--user", "-u", help="Only this user's tenants (every agent)."),
    agent: str = typer.Option(None, "--agent", "-a", help="Only this agent's tenants."),
    max_age: int = typer.Option(None, "--max-age", help="Only what was said or written in the last DAYS days."),
    as_json: bool = JSON,
) -> None:
    """Extract typed memories with the graph_ingest_job Dagster job (incremental by content hash)."""
    from memory_pipeline.config import get_settings
    from memory_pipeline.definitions import defs
    from memory_pipeline.memories.assets import MAX_AGE_TAG, SOURCE_TAG
    from memory_pipeline.memories.pipeline import SOURCE_KINDS
    from memory_pipeline.orchestration.runs import (
        discover_tenants,
        local_instance,
        materialization_metadata,
        run_partitioned_job,
    )
    from memory_pipeline.tenancy import Tenant

    if source not in SOURCE_KINDS:
        _fail(f"--source {source!r}: use markdown, transcript or all")
    if max_age is not None and max_age < 1:
        _fail("--max-age must be a whole number of days, 1 or more")
    root = get_settings().root
    keys = [
        k for k in discover_tenants(root)
        if (user is None or Tenant.from_key(k).user_id == user) and (agent is None or Tenant.from_key(k).agent_id == agent)
    ]
    if not keys:
        _fail(f"no tenants under {root!r} match --user {user!r} --agent {agent!r}")
    tags = {SOURCE_TAG: source}
    if max_age is not None:
        tags[MAX_AGE_TAG] = str(max_age)
    started = time.perf_counter()
    result = run_partitioned_job(defs, "graph_ingest_job", local_instance(), keys, tags=tags)
    summary = {"run_id": result.run_id, "success": result.success, "tenants": keys,
               "seconds": round(time.perf_counter() - started, 2)}
    # One asset: its figures go at the top level (typed_memories' own seconds would hide the run's).
    figures = materialization_metadata(result, numeric_only=False, timings=False, skip=("preview", "tenants"))
    for values in figures.values():
        summary.update(values)
    if as_json:
        _print_json(summary)
        return
    console.print(f"graph ingest: {len(keys)} tenant(s) in run {result.run_id[:8]} ({summary['seconds']} s)")
    for key, value in summary.items():
        if key not in ("run_id", "tenants", "seconds"):
            console.print(f"  {key}: {value}")


@graph_app.command("stats")
def stats_command(agent: str = AGENT, user: str = USER, as_json: bool = JSON) -> None:
    """Memories by type and by source, with and without embeddings, and relation counts."""
    stats = _service(agent, user).stats()
    if as_json:
        _print_json(stats)
        return
    console.print(f"[bold]{', '.join(stats['tenants'])}[/]: {stats['memories']} memories "
                  f"({stats['with_embedding']} with an embedding, {stats['without_embedding']} without)")
    console.print("  by type:   " + ", ".join(f"{k} {v}" for k, v in stats["by_type"].items() if v))
    console.print("  by source: " + ", ".join(f"{k} {v}" for k, v in stats["by_source"].items()))
    rel = stats["relations"]
    console.print(f"  relations: {rel['total']} ({rel['valid_now']} valid now), entities: {rel['entities']}")
    console.print("  audit:     " + (", ".join(f"{k} {v}" for k, v in stats["audit"].items()) or "empty"))


@graph_app.command("search")
def search_command(
    query: str = typer.Argument(..., help="What to recall."),
    agent: str = AGENT,
    user: str = USER,
    memory_type: str = typer.Option(None, "--type", "-t", help="Only this memory type."),
    k: int = typer.Option(6, "--k", "-k"),
    min_score: float = typer.Option(None, "--min-score"),
    as_json: bool = JSON,
) -> None:
    """Hybrid recall over typed memories (vector + full text)."""
    with _refusals():
        hits = _service(agent, user).recall(query, memory_type=memory_type, k=k, min_score=min_score)
    _print_memories(hits, f"memories of {agent}/{user} for {query!r}", as_json)


@graph_app.command("query")
def query_command(
    agent: str = AGENT,
    user: str = USER,
    memory_type: list[str] = typer.Option(None, "--type", "-t", help="Memory type; repeatable."),
    happens_within: str = typer.Option(None, "--happens-within", help="e.g. 7d, 12h, 2w: scheduled from now."),
    occurred_from: str = typer.Option(None, "--from", help="Occurred on or after (ISO date or time, local)."),
    occurred_to: str = typer.Option(None, "--to", help="Occurred on or before (a date includes the whole day)."),
    sort_by: str = typer.Option("recent", "--sort", help="scheduled, recent or confidence."),
    max_results: int = typer.Option(10, "--max"),
    now: str = typer.Option(None, "--now", help="Pretend it is this time (ISO), for windows."),
    include_superseded: bool = typer.Option(False, "--include-superseded", help="Keep plans later moved."),
    as_json: bool = JSON,
) -> None:
    """Typed memories by type, time window and order."""
    service = _service(agent, user)
    with _refusals():
        rows = service.query(
            memory_type=memory_type or None, happens_within=happens_within, occurred_from=occurred_from,
            occurred_to=occurred_to, sort_by=sort_by, max_results=max_results, now=service.time(now, "--now"),
            include_superseded=include_superseded,
        )
    _print_memories(rows, f"memories of {agent}/{user}", as_json)


@graph_app.command("entity")
def entity_command(
    name: str = typer.Argument(..., help="An entity: a person, place, organisation, project."),
    agent: str = AGENT,
    user: str = USER,
    as_of: str = typer.Option(None, "--as-of", help="Relations valid at this time (ISO; default now)."),
    history: bool = typer.Option(False, "--history", help="Also relations no longer valid."),
    as_json: bool = JSON,
) -> None:
    """Knowledge-graph search: an entity, its relations and neighbours, and memories naming it."""
    with _refusals():
        found = _service(agent, user).knowledge(name, as_of=as_of, include_history=history)
    if as_json:
        _print_json(found)
        return
    console.print(f"[bold]{name}[/] as of {found['as_of'][:16]}")
    for r in found["relations"]:
        span = f"{(r['valid_from'] or '?')[:10]} .. {(r['valid_to'] or 'now')[:10]}"
        console.print(f"  {r['subject']} -[{r['predicate']}]-> {r['object']}  ({span}) {r['citation']}", markup=False)
    if found["neighbours"]:
        console.print("  neighbours: " + ", ".join(found["neighbours"]), markup=False)
    for m in found["memories"][:10]:
        console.print(f"  [{m['memory_type']}] {m['content'][:160]}", markup=False)
    if found.get("note"):
        console.print(f"  [dim]{found['note']}[/]")


@graph_app.command("bulletin")
def bulletin_command(
    kind: str = typer.Argument("memory", help="memory or context."),
    agent: str = AGENT,
    user: str = USER,
    per_section: int = typer.Option(5, "--per-section"),
    now: str = typer.Option(None, "--now", help="Pretend it is this time (ISO)."),
) -> None:
    """A Markdown bulletin for a system prompt."""
    service = _service(agent, user)
    with _refusals():
        print(service.bulletin(kind, per_section=per_section, now=service.time(now, "--now")))


@memory_app.command("store")
def store_command(
    content: str = typer.Argument(...),
    agent: str = AGENT,
    user: str = USER,
    memory_type: str = typer.Option(..., "--type", "-t", help="identity, preference, fact, event, ..."),
    reasoning: str = typer.Option(None, "--reasoning"),
    happens_at: str = typer.Option(None, "--happens-at", help="When it is scheduled (ISO, local)."),
    confidence: float = typer.Option(None, "--confidence"),
) -> None:
    """Store a memory (audited)."""
    with _refusals():
        _print_json(_service(agent, user).store_memory(memory_type, content, reasoning, happens_at, None, confidence))


@memory_app.command("update")
def update_command(
    memory_id: str = typer.Argument(...),
    agent: str = AGENT,
    user: str = USER,
    content: str = typer.Option(None, "--content"),
    memory_type: str = typer.Option(None, "--type", "-t"),
    happens_at: str = typer.Option(None, "--happens-at"),
    confidence: float = typer.Option(None, "--confidence"),
    reason: str = typer.Option(None, "--reason"),
) -> None:
    """Change a memory (audited: which fields, why)."""
    with _refusals():
        _print_json(_service(agent, user).update_memory(
            memory_id, reason=reason, content=content, memory_type=memory_type, happens_at=happens_at,
            confidence=confidence,
        ))


@memory_app.command("forget")
def forget_command(
    memory_id: str = typer.Argument(...),
    agent: str = AGENT,
    user: str = USER,
    reason: str = typer.Option(..., "--reason", help="Why (kept in the audit; the content is not)."),
) -> None:
    """Forget a memory: removed from every table and index; the audit keeps id, reason, time."""
    with _refusals():
        _print_json(_service(agent, user).forget_memory(memory_id, reason))


@memory_app.command("skip")
def skip_command(
    content: str = typer.Argument(...),
    agent: str = AGENT,
    user: str = USER,
    reason: str = typer.Option(..., "--reason"),
    memory_type: str = typer.Option("observation", "--type", "-t"),
) -> None:
    """Record a decision not to store something (extraction will not store it either)."""
    with _refusals():
        _print_json(_service(agent, user).skip_memory(content, reason, memory_type))


def register(app: typer.Typer) -> None:
    app.add_typer(graph_app, name="graph")
    app.add_typer(memory_app, name="memory")
