"""Typed-memory commands: ``memories ingest|stats|search|query|entity|bulletin``, ``context``
(working memory) and ``memory store|update|forget|skip|audit`` (every write audited). ``graph``,
the group's former name, still runs its commands (hidden from ``--help``, with a one-line notice)."""

from __future__ import annotations

import sys
import time

import typer

from memory_pipeline.cli import options, runs
from memory_pipeline.cli.app import BadInput, app
from memory_pipeline.cli.output import clip, print_json, print_records, quoted, say, summary_table, superseded_label
from memory_pipeline.cli.tenants import require_tenant, select_tenants

memories_app = typer.Typer(no_args_is_help=True, help="Typed memories: extraction, search, queries, the knowledge graph, bulletins.")
memory_app = typer.Typer(no_args_is_help=True, help="Store, update, forget or skip a typed memory (audited).")
app.add_typer(memories_app, name="memories")
app.add_typer(memory_app, name="memory")


def _renamed_group() -> None:
    typer.echo("note: 'graph' is now 'memories' (memory-pipeline memories ...); 'graph' will go away", err=True)


app.add_typer(memories_app, name="graph", hidden=True, callback=_renamed_group, help="Former name of 'memories'.")

TYPE = typer.Option(None, "--type", "-t", help=f"Memory type: {options.MEMORY_TYPE_HELP}.")
MEMORY_ID = typer.Argument(..., help="The memory's id (m_...), as queries return it.")
CONFIDENCE = typer.Option(None, "--confidence", min=0.0, max=1.0, help="0 to 1 (a new memory: 0.8).")
HAPPENS_AT = typer.Option(None, "--happens-at", help="When it is scheduled (ISO, local).")


def _service(agent: str, user: str):
    from memory_pipeline.memories.service import MemoryService

    agent, user = require_tenant(agent, user)
    return MemoryService(agent, user, actor="cli")


def _print_memories(rows: list[dict], title: str, as_json: bool) -> None:
    """Memories found by a search or query: JSON for programs, a table for people."""
    if as_json:
        print_json(rows)
        return
    if not rows:
        say(f"{title}: nothing found")
        return
    print_records(title, [(
        "  ".join(p for p in (r["id"], r["memory_type"], f"said {_stamp(r.get('occurred_at'))}" if r.get("occurred_at") else "",
                               f"due {_stamp(r.get('happens_at'))}" if r.get("happens_at") else "",
                               f"conf {r['confidence']:.2f}", r["source"], f"score {r['score']:.3f}" if "score" in r else "") if p),
        superseded_label(r.get("superseded")) + clip(r["content"], 300),
    ) for r in rows])


def _stamp(value: str | None) -> str:
    """An ISO time as people read it: minutes, no seconds, no zone; midnight as the day alone."""
    text = (value or "")[:16].replace("T", " ")
    return text.removesuffix(" 00:00")


@memories_app.command("ingest")
def ingest_command(
    agent: list[str] = options.AGENTS,
    user: list[str] = options.USERS,
    every: bool = options.ALL,
    source_kind: str = typer.Option("all", "--input", help="What to extract from: markdown, transcript or all."),
    max_age: int = typer.Option(None, "--max-age", min=1, help="Read only what was written in the last DAYS days; older memories are kept."),
    as_json: bool = options.JSON,
) -> None:
    """Extract typed memories with the typed_memories_job Dagster job (incremental by content hash)."""
    from memory_pipeline.memories.assets import MAX_AGE_TAG, SOURCE_TAG
    from memory_pipeline.memories.pipeline import SOURCE_KINDS
    from memory_pipeline.orchestration.runs import run_partitioned_jobs

    if source_kind not in SOURCE_KINDS:
        raise BadInput(f"--input {source_kind!r}: use markdown, transcript or all")
    keys = select_tenants(agent, user, every)
    tags = {SOURCE_TAG: source_kind, **({MAX_AGE_TAG: str(max_age)} if max_age is not None else {})}
    started = time.perf_counter()
    with runs.progress("extracting typed memories", None, "runs") as bars:
        results = run_partitioned_jobs(runs.defs(), "typed_memories_job", runs.instance(), keys, tags=tags,
                                       run_config=runs.run_config())
        bars.advance(len(results))
    summary = runs.summarize(results, keys, started, {"input": source_kind})
    if as_json:
        print_json(summary)
    else:
        runs.print_summary("memories ingest", summary)


@memories_app.command("stats")
def stats_command(agent: str = options.AGENT, user: str = options.USER, as_json: bool = options.JSON) -> None:
    """Memories by type and by source, with and without embeddings, and relation counts."""
    stats = _service(agent, user).stats()
    if as_json:
        print_json(stats)
        return
    rel = stats["relations"]
    summary_table(
        f"{', '.join(stats['tenants'])}: {stats['memories']} memories", ("", ""),
        [("embeddings", f"{stats['with_embedding']} with, {stats['without_embedding']} without"),
         ("by type", ", ".join(f"{k} {v}" for k, v in stats["by_type"].items() if v)),
         ("by source", ", ".join(f"{k} {v}" for k, v in stats["by_source"].items())),
         ("relations", f"{rel['total']} ({rel['valid_now']} valid now), entities: {rel['entities']}"),
         ("audit", ", ".join(f"{k} {v}" for k, v in stats["audit"].items()) or "empty")],
        show_header=False,
    )


@memories_app.command("search")
def search_command(
    query: str = options.text_argument("What to recall."),
    agent: str = options.AGENT,
    user: str = options.USER,
    memory_type: str = TYPE,
    limit: int = options.limit(6, maximum=options.MEMORIES_MAX_RESULTS),
    min_score: float = typer.Option(None, "--min-score", min=0.0, help="Drop results below this."),
    as_json: bool = options.JSON,
) -> None:
    """Hybrid recall over typed memories (vector + full text)."""
    hits = _service(agent, user).recall(query, memory_type=memory_type, k=limit, min_score=min_score)
    _print_memories(hits, f"memories of {agent}/{user} for {quoted(query)}", as_json)


@memories_app.command("query")
def query_command(
    agent: str = options.AGENT,
    user: str = options.USER,
    memory_type: list[str] = typer.Option(None, "--type", "-t", help=f"Memory type ({options.MEMORY_TYPE_HELP}); repeatable."),
    happens_within: str = typer.Option(None, "--happens-within", help="e.g. 7d, 12h, 2w: scheduled from now."),
    occurred_from: str = typer.Option(None, "--occurred-from", help="Occurred on or after (ISO date or time, local)."),
    occurred_to: str = typer.Option(None, "--occurred-to", help="Occurred on or before (a date includes the whole day)."),
    sort_by: str = typer.Option("recent", "--sort", help="scheduled, recent or confidence."),
    limit: int = options.limit(10, maximum=options.MEMORIES_MAX_RESULTS),
    now: str = typer.Option(None, "--now", help="Pretend it is this time (ISO), for windows."),
    include_superseded: bool = typer.Option(False, "--include-superseded", help="Keep plans later moved."),
    as_json: bool = options.JSON,
) -> None:
    """Typed memories by type, time window and order."""
    service = _service(agent, user)
    rows = service.query(
        memory_type=memory_type or None, happens_within=happens_within, occurred_from=occurred_from,
        occurred_to=occurred_to, sort_by=sort_by, max_results=limit, now=service.time(now, "--now"),
        include_superseded=include_superseded,
    )
    _print_memories(rows, f"memories of {agent}/{user}", as_json)


@memories_app.command("entity")
def entity_command(
    name: str = options.text_argument("An entity: a person, place, organisation, project."),
    agent: str = options.AGENT,
    user: str = options.USER,
    as_of: str = typer.Option(None, "--as-of", help="Relations valid at this time (ISO; default now)."),
    history: bool = typer.Option(False, "--history", help="Also relations no longer valid."),
    as_json: bool = options.JSON,
) -> None:
    """Knowledge-graph search: an entity, its relations and neighbours, and memories naming it."""
    found = _service(agent, user).knowledge(name, as_of=as_of, include_history=history)
    if as_json:
        print_json(found)
        return
    say(f"{name} as of {found['as_of'][:16]}")
    for r in found["relations"]:
        span = f"{(r['valid_from'] or '?')[:10]} .. {(r['valid_to'] or 'now')[:10]}"
        say(f"  {r['subject']} -[{r['predicate']}]-> {r['object']}  ({span}) {r['citation']}")
    if found["neighbours"]:
        say("  neighbours: " + ", ".join(found["neighbours"]))
    for m in found["memories"][:10]:
        say(f"  [{m['memory_type']}] {clip(m['content'], 160)}")
    if found.get("note"):
        say(f"  {found['note']}")


@memories_app.command("bulletin")
def bulletin_command(
    kind: str = typer.Argument("memory", help="memory (identity, goals, preferences, recent events) or context (todos, time-sensitive)."),
    agent: str = options.AGENT,
    user: str = options.USER,
    per_section: int = typer.Option(5, "--per-section", min=1, max=50, help="Items per section."),
    now: str = typer.Option(None, "--now", help="Read the memory as known at this time (ISO; default now)."),
    as_json: bool = options.JSON,
) -> None:
    """A Markdown bulletin for a system prompt."""
    service = _service(agent, user)
    text = service.bulletin(kind, per_section=per_section, now=service.time(now, "--now"))
    if as_json:
        print_json({"kind": kind, "tenant": service.tenant.key, "markdown": text})
    else:
        print(text)


@app.command("context")
def context_command(
    agent: str = options.AGENT,
    user: str = options.USER,
    budget: int = typer.Option(None, "--budget", min=50, help="Most tokens it may take (default 1500, or recall's context_token_budget)."),
    recent: int = typer.Option(30, "--recent", min=0, max=30, help="Most recent entries listed (0-30)."),
    now: str = typer.Option(None, "--now", help="Read the memory as known at this time (ISO; default now)."),
    as_json: bool = options.JSON,
) -> None:
    """Working memory: the section an agent loads every cycle (identity, preferences, goals,
    todos, due items, recent entries), dated and cited, within a token budget, in a stable order."""
    service = _service(agent, user)
    found = service.context(token_budget=budget, max_recent=recent, now=service.time(now, "--now"))
    if as_json:
        print_json(found.to_dict())
    else:
        sys.stdout.write(found.markdown)


def _done(record: dict, as_json: bool, line: str) -> None:
    if as_json:
        print_json(record)
    else:
        say(line)


@memory_app.command("store")
def store_command(
    content: str = options.text_argument("What to remember."),
    agent: str = options.AGENT,
    user: str = options.USER,
    memory_type: str = typer.Option(..., "--type", "-t", help=f"Memory type: {options.MEMORY_TYPE_HELP}."),
    reasoning: str = typer.Option(None, "--reasoning", help="Why it is worth remembering."),
    happens_at: str = HAPPENS_AT,
    confidence: float = CONFIDENCE,
    as_json: bool = options.JSON,
) -> None:
    """Store a memory (audited)."""
    r = _service(agent, user).store_memory(memory_type, content, reasoning, happens_at, None, confidence)
    _done(r, as_json, f"stored {r['id']} ({r['memory_type']}): {r['content']}")


@memory_app.command("update")
def update_command(
    memory_id: str = MEMORY_ID,
    agent: str = options.AGENT,
    user: str = options.USER,
    content: str = options.text_option(None, "--content", help="New text."),
    memory_type: str = TYPE,
    happens_at: str = HAPPENS_AT,
    confidence: float = CONFIDENCE,
    reason: str = typer.Option(None, "--reason", help="Why (kept in the audit)."),
    as_json: bool = options.JSON,
) -> None:
    """Change a memory (audited: which fields, why)."""
    r = _service(agent, user).update_memory(
        memory_id, reason=reason, content=content, memory_type=memory_type, happens_at=happens_at, confidence=confidence,
    )
    _done(r, as_json, f"updated {r['id']} ({r['memory_type']}): {r['content']}")


@memory_app.command("forget")
def forget_command(
    memory_id: str = MEMORY_ID,
    agent: str = options.AGENT,
    user: str = options.USER,
    reason: str = typer.Option(..., "--reason", help="Why (kept in the audit; the content is not)."),
    as_json: bool = options.JSON,
) -> None:
    """Forget a memory: removed from every table and index; the audit keeps id, reason, time."""
    r = _service(agent, user).forget_memory(memory_id, reason)
    _done(r, as_json, f"forgot {r['id']} ({r['reason']})")


@memory_app.command("skip")
def skip_command(
    content: str = options.text_argument("What not to remember."),
    agent: str = options.AGENT,
    user: str = options.USER,
    reason: str = typer.Option(..., "--reason", help="Why not (kept in the audit)."),
    memory_type: str = typer.Option("observation", "--type", "-t", help=f"Memory type: {options.MEMORY_TYPE_HELP}."),
    as_json: bool = options.JSON,
) -> None:
    """Record a decision not to store something (extraction will not store it either)."""
    r = _service(agent, user).skip_memory(content, reason, memory_type)
    _done(r, as_json, f"skipped: {content} ({reason})")


@memory_app.command("audit")
def audit_command(
    agent: str = options.AGENT,
    user: str = options.USER,
    op: list[str] = typer.Option(None, "--op", help="Only this action: store, update, forget or skip; repeatable."),
    memory_type: list[str] = typer.Option(None, "--type", "-t", help=f"Only this memory type ({options.MEMORY_TYPE_HELP}); repeatable."),
    since: str = typer.Option(None, "--since", help="From this long ago (90m, 12h, 7d, 2w) or this ISO date or time (local)."),
    until: str = typer.Option(None, "--until", help="Up to this ISO date (included) or time (local)."),
    limit: int = options.limit(50, "How many, newest first."),
    as_json: bool = options.JSON,
) -> None:
    """The audit log: which memory was stored, updated, forgotten or skipped, which fields, why, by whom, when."""
    rows = _service(agent, user).audit(op=op or None, memory_type=memory_type or None, since=since, until=until, limit=limit)
    if as_json:
        print_json(rows)
    elif not rows:
        say(f"audit of {agent}/{user}: nothing found")
    else:
        print_records(f"audit of {agent}/{user}", [(
            "  ".join(p for p in (_stamp(r["at"]), r["op"], r["memory_id"], r["memory_type"] or "",
                                   f"fields: {', '.join(r['fields'])}" if r["fields"] else "", f"by {r['actor']}") if p),
            r["reason"] or "",
        ) for r in rows])
