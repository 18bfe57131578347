"""Recall commands: ``search``, ``get`` and ``inject``, for one tenant (``-a``/``-u``), and the
drill-down: ``expand`` a citation to what it was built from, ``grep`` every transcript and note."""

from __future__ import annotations

import typer

from memory_pipeline.cli import options
from memory_pipeline.cli.app import BadInput, app
from memory_pipeline.cli.output import clip, console, print_json, print_records, quoted, say, superseded_label
from memory_pipeline.cli.tenants import GLOBAL_USER, require_tenant


def _reader(agent: str, user: str) -> tuple[str, str | None]:
    """Recall's spelling of the tenant: no user means the agent-wide memory."""
    agent, user = require_tenant(agent, user)
    return agent, None if user == GLOBAL_USER else user


def _record(channel: str, **events) -> None:
    """What this command handed out, in the access log (activation/access_log.py)."""
    from memory_pipeline.activation.access_log import record_access
    from memory_pipeline.config import get_settings

    record_access(get_settings().lancedb_uri, channel, **events)


@app.command("search")
def search_command(
    query: str = options.text_argument("What to recall."),
    agent: str = options.AGENT,
    user: str = options.USER,
    limit: int = options.limit(None, "Results to return (default 6)."),
    source: list[str] = typer.Option(None, "--source", "-s", help="memory, sessions, episodes or facts; repeatable."),
    min_score: float = typer.Option(None, "--min-score", min=0.0, help="Drop results below this (default 0.35)."),
    mmr: bool = typer.Option(None, "--mmr/--no-mmr", help="Re-rank for variety (MMR, lambda 0.7)."),
    now: str = typer.Option(
        None, "--now", help="When the question is asked (ISO-8601, default now): 'last month' and "
        "'two weeks ago' count from it.",
    ),
    as_json: bool = options.JSON,
) -> None:
    """Hybrid search (vector + full text) of a tenant's memory, with citations."""
    from memory_pipeline.recall.query import reference_time
    from memory_pipeline.recall.search import search

    if not query.strip():  # as `memories search` and the MCP tool: an empty query is a mistake, not "nothing"
        raise BadInput("the query is empty: say what to recall, e.g. search \"where does Alice work\" -a AGENT")
    try:
        asked_at = reference_time(now) if now else None
    except ValueError as exc:
        raise BadInput(f"--now: {exc}") from None
    agent, reader = _reader(agent, user)
    results = search(query, agent, reader, sources=source or None, k=limit, min_score=min_score, mmr=mmr, now=asked_at)
    _record("search", returned=results)
    if as_json:
        print_json([r.to_dict() for r in results])
        return
    who = f"{agent}/{reader or GLOBAL_USER}"
    if not results:
        say(f"no memory of {who} scores above the minimum for {quoted(query)}")
        return
    print_records(f"recall for {who}: {quoted(query)}", [(
        "  ".join(p for p in (f"{i}.", f"{r.score:.3f}", (r.when or "").removesuffix(" UTC"), r.source, r.citation) if p),
        _label(r) + clip(r.snippet, 400),
    ) for i, r in enumerate(results, 1)])


def _label(result) -> str:
    """Whether a later statement replaced a result, or ranks above it as newer."""
    if result.superseded:
        return superseded_label(result.superseded)
    return "[earlier] " if result.earlier else ""


@app.command("get")
def get_command(
    path: str = options.text_argument("A path or citation from search (path#Lstart-Lend), facts/<id> or episodes/<id>."),
    agent: str = options.AGENT,
    user: str = options.USER,
    from_line: int = typer.Option(None, "--from", min=1, help="First line, 1-based (default 1 or the citation's)."),
    lines: int = typer.Option(None, "--lines", "-n", min=1, help="How many lines (default: to the end)."),
    as_json: bool = options.JSON,
) -> None:
    """Print exact lines of a memory file, typed memory or episode the tenant may read."""
    from memory_pipeline.recall.get import get

    agent, reader = _reader(agent, user)
    result = get(path, from_line, lines, agent=agent, user=reader)
    _record("get", used=[result])
    if as_json:
        print_json(result.to_dict())
        return
    kind = "record" if result.path.startswith(("facts/", "episodes/")) else "file"
    console().print(f"[bold]{result.citation}[/] ({result.total_lines} lines in {kind})", highlight=False)
    for number, line in enumerate(result.lines, result.start_line):
        print(f"{number:>5}  {line}")


@app.command("inject")
def inject_command(
    message: str = options.text_argument("The incoming user message."),
    agent: str = options.AGENT,
    user: str = options.USER,
    as_json: bool = options.JSON,
) -> None:
    """Show the memory section auto-inject would add to the prompt for a message."""
    from memory_pipeline.recall.inject import inject

    agent, reader = _reader(agent, user)
    result = inject(message, agent, reader)
    _record("inject", used=result.results)
    if as_json:
        print_json(result.to_dict())
        return
    if result.skipped_reason:
        say(f"nothing injected: trivial message ({result.skipped_reason})")
        return
    say(f"matched {result.matched}, injected {result.injected}, top score {result.top_score:.3f}, {result.tokens} tokens")
    if result.section:
        print(result.section)


# -- drill-down ---------------------------------------------------------------------------------
@app.command("expand")
def expand_command(
    citation: str = options.text_argument(
        "A citation: path#Lstart-Lend (a dreamed line, a session window), facts/<id>, episodes/<id> or relations/<id>."),
    agent: str = options.AGENT,
    user: str = options.USER,
    depth: int = typer.Option(1, "--depth", "-d", min=0, help="Levels of sources to show (default 1)."),
    all_levels: bool = typer.Option(False, "--all-levels", help="Every level, down to the turns and note lines."),
    as_json: bool = options.JSON,
) -> None:
    """Show what a unit of memory was built from: dreamed line -> episodes -> turns; typed memory or
    relation -> the turn or note line it was read from."""
    from memory_pipeline.recall.expand import expand

    agent, reader = _reader(agent, user)
    unit = expand(citation, agent=agent, user=reader, depth=None if all_levels else depth)
    if as_json:
        print_json(unit.to_dict())
        return
    _print_unit(unit, 0)


def _print_unit(unit, level: int) -> None:
    pad = "  " * level
    when = f" ({unit.when})" if unit.when else ""
    console().print(f"{pad}[bold]{unit.kind}[/] {unit.citation}{when}", highlight=False, soft_wrap=True)
    for line in unit.text.splitlines() or [""]:
        print(f"{pad}  {clip(line, 300)}")
    for source in unit.sources:
        _print_unit(source, level + 1)


@app.command("grep")
def grep_command(
    pattern: str = options.text_argument("A regular expression (at most 300 characters)."),
    agent: str = options.AGENT,
    user: str = options.USER,
    ignore_case: bool = typer.Option(False, "--ignore-case", "-i", help="Match regardless of case."),
    limit: int = options.limit(50, "Most matching lines to return (1-200)."),
    as_json: bool = options.JSON,
) -> None:
    """Search every transcript and note the tenant may read with a regular expression (bounded in
    time and size); each match with its citation and time."""
    from memory_pipeline.recall.grep import grep

    agent, reader = _reader(agent, user)
    result = grep(pattern, agent=agent, user=reader, ignore_case=ignore_case, limit=limit)
    if as_json:
        print_json(result.to_dict())
        return
    if not result.matches:
        say(f"no line of {result.files_searched} file(s) matches {quoted(pattern)}")
        return
    for match in result.matches:
        when = f" ({match.when})" if match.when else ""
        print(f"{match.citation}{when}: {match.text}")
    if result.truncated:
        say(f"stopped at {len(result.matches)} matches (--limit)")
