"""Drill-down commands: ``expand`` a citation to what it was built from, ``grep`` every transcript and note."""

from __future__ import annotations

import typer

from memory_pipeline.cli import options
from memory_pipeline.cli.app import app
from memory_pipeline.cli.output import console, print_json, say
from memory_pipeline.cli.recall import _reader


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
        print(f"{pad}  {line[:300]}")
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
        say(f"no line of {result.files_searched} file(s) matches {pattern!r}")
        return
    for match in result.matches:
        when = f" ({match.when})" if match.when else ""
        print(f"{match.citation}{when}: {match.text}")
    if result.truncated:
        say(f"stopped at {len(result.matches)} matches (--limit)")
