"""Recall commands: ``search``, ``get``, ``inject`` and ``eval locomo``.

Tables for people, ``--json`` for programs; every error says what to do next.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

console = Console()
err = Console(stderr=True)


def _fail(message: str, code: int = 2) -> None:
    err.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(code)


def _known_errors():
    from memory_pipeline.recall.get import AccessDeniedError, GetError
    from memory_pipeline.recall.search import RecallError
    from memory_pipeline.tenancy import InvalidTenantError

    return (RecallError, GetError, AccessDeniedError, InvalidTenantError, ValueError)


def search_command(
    query: str = typer.Argument(..., help="What to recall."),
    agent: str = typer.Option(..., "--agent", "-a", help="Agent id."),
    user: str = typer.Option(None, "--user", "-u", help="User id; omit for the agent-wide memory."),
    k: int = typer.Option(None, "--k", "-k", help="Results to return (default 6)."),
    source: list[str] = typer.Option(None, "--source", "-s", help="memory, sessions, episodes, facts; repeatable."),
    min_score: float = typer.Option(None, "--min-score", help="Drop results below this (default 0.35)."),
    mmr: bool = typer.Option(None, "--mmr/--no-mmr", help="Re-rank for variety (MMR, lambda 0.7)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Hybrid search of an agent's memory for one user, with citations."""
    from memory_pipeline.recall.search import search

    try:
        results = search(query, agent, user, sources=source or None, k=k, min_score=min_score, mmr=mmr)
    except _known_errors() as exc:
        _fail(str(exc))
    if as_json:
        print(json.dumps([r.to_dict() for r in results], indent=2, default=str))
        return
    if not results:
        console.print(f"no memory of {agent}/{user or '_global'} scores above the minimum for {query!r}")
        return
    table = Table(show_lines=True, title=f"recall for {agent}/{user or '_global'}: {query!r}")
    for column in ("#", "score", "source", "citation", "snippet"):
        table.add_column(column, overflow="fold")
    for i, r in enumerate(results, 1):
        parts = f"v {r.parts['vector']:.2f} t {r.parts['text']:.2f}"
        table.add_row(str(i), f"{r.score:.3f}\n[dim]{parts}[/]", r.source, r.citation, r.snippet[:400])
    console.print(table)


def get_command(
    path: str = typer.Argument(..., help="A path or citation from search (path#Lstart-Lend)."),
    agent: str = typer.Option(..., "--agent", "-a"),
    user: str = typer.Option(None, "--user", "-u"),
    from_line: int = typer.Option(None, "--from", help="First line, 1-based (default 1 or the citation's)."),
    lines: int = typer.Option(None, "--lines", "-n", help="How many lines (default: to the end)."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Print exact lines of a memory file, typed memory or episode the agent and user may read."""
    from memory_pipeline.recall.get import get

    try:
        result = get(path, from_line, lines, agent=agent, user=user)
    except _known_errors() as exc:
        _fail(str(exc))
    if as_json:
        print(json.dumps(result.to_dict(), indent=2))
        return
    kind = "record" if result.path.startswith(("facts/", "episodes/")) else "file"
    console.print(f"[bold]{result.citation}[/] ({result.total_lines} lines in {kind})")
    for number, line in enumerate(result.lines, result.start_line):
        print(f"{number:>5}  {line}")


def inject_command(
    message: str = typer.Argument(..., help="The incoming user message."),
    agent: str = typer.Option(..., "--agent", "-a"),
    user: str = typer.Option(None, "--user", "-u"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Show the memory section auto-inject would add to the prompt for a message."""
    from memory_pipeline.recall.inject import inject

    try:
        result = inject(message, agent, user)
    except _known_errors() as exc:
        _fail(str(exc))
    if as_json:
        print(json.dumps(result.to_dict(), indent=2))
        return
    if result.skipped_reason:
        console.print(f"nothing injected: trivial message ({result.skipped_reason})")
        return
    console.print(
        f"matched {result.matched}, injected {result.injected}, top score {result.top_score:.3f}, "
        f"{result.tokens} tokens"
    )
    if result.section:
        print(result.section)


eval_app = typer.Typer(no_args_is_help=True, help="Measure recall quality.")


@eval_app.command("locomo")
def eval_locomo_command(
    data: Path = typer.Option(..., "--data", help="Folder with sessions/<conversation>/*.jsonl and queries.jsonl."),
    out: Path = typer.Option(..., "--out", help="Folder for results.jsonl and summary.json."),
    k: int = typer.Option(10, "--k", help="Results per question."),
    embedder: str = typer.Option("minilm", "--embedder", help="minilm (the real model) or hash (plumbing only)."),
    workdir: Path = typer.Option(None, "--workdir", help="Keep the staged workspace and index here (default: a temp dir)."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Ingest a LoCoMo-format set through the L0 job, answer every question, print R@k and MRR."""
    from memory_pipeline.eval.locomo import EvalDataError, run_locomo_eval

    try:
        report = run_locomo_eval(data, out, k=k, embedder=embedder, workdir=workdir)
    except EvalDataError as exc:
        _fail(str(exc))
    if as_json:
        print(json.dumps(report.to_dict(), indent=2))
        return
    table = Table(title=f"recall on {data} ({report.queries} questions, {len(report.conversations)} conversations)")
    for column in ("category", "n", "R@1", "R@5", "R@10", "MRR"):
        table.add_column(column, justify="right" if column != "category" else "left")
    groups = sorted(g for g in report.table if g != "overall") + ["overall"]
    for group in groups:
        row = report.table[group]
        table.add_row(group, str(row["n"]), *(f"{row[m]:.3f}" for m in ("R@1", "R@5", "R@10", "MRR")))
    console.print(table)
    console.print(f"mean result length: {report.mean_tokens} tokens")
    console.print("timings: " + ", ".join(f"{key} {value}" for key, value in report.timings.items()))
    console.print(f"results: {report.results_path} (ingest log: {report.results_path.parent / 'ingest.log'})")


def register(app: typer.Typer) -> None:
    app.command("search")(search_command)
    app.command("get")(get_command)
    app.command("inject")(inject_command)
    app.add_typer(eval_app, name="eval")
