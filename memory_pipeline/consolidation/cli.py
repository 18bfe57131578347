"""Consolidation commands: ``consolidate``, ``dream``, ``episodes`` and ``flush``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

console = Console()


def _totals(results) -> dict[str, dict]:
    """Numeric metadata per asset, added up over the runs (one run per partition), timings left out."""
    from memory_pipeline.orchestration.runs import materialization_metadata

    totals: dict[str, dict] = {}
    for result in results:
        for asset, values in materialization_metadata(result, timings=False).items():
            into = totals.setdefault(asset, {})
            for key, value in values.items():
                into[key] = into.get(key, 0) + value
    return totals


def consolidate_command(
    tenant: list[str] = typer.Option(None, "--tenant", "-t", help="Tenant key <agent>~<user>; default: every tenant."),
    day: list[str] = typer.Option(None, "--day", "-d", help="Only sessions completed on this day (YYYY-MM-DD)."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON summary."),
) -> None:
    """Consolidate completed sessions into episodes and the knowledge graph (one run per day x tenant)."""
    from memory_pipeline.config import get_settings
    from memory_pipeline.consolidation.launch import completed_partitions, run_consolidation
    from memory_pipeline.definitions import defs
    from memory_pipeline.orchestration.runs import local_instance

    settings = get_settings()
    partitions = completed_partitions(settings.root, settings.session_idle_minutes, tenant or None)
    if day:
        partitions = [p for p in partitions if p[0] in set(day)]
    if not partitions:
        console.print("no completed session to consolidate")
        raise typer.Exit(0)
    results = run_consolidation(defs, local_instance(), partitions)
    summary = {"partitions": [f"{d}|{t}" for d, t in partitions], "assets": _totals(results)}
    if as_json:
        print(json.dumps(summary, indent=2))
        return
    console.print(f"consolidated {len(partitions)} partition(s) (day|tenant) in {len(results)} run(s)")
    for asset, values in summary["assets"].items():
        console.print(f"  {asset}: " + ", ".join(f"{k}={v}" for k, v in values.items()))


def dream_command(
    tenant: list[str] = typer.Option(None, "--tenant", "-t", help="Tenant key; default: tenants with >= 5 unpromoted episodes."),
) -> None:
    """Promote unpromoted episodes into each tenant's _system/dreaming/YYYYMMDD-consolidated.md."""
    from memory_pipeline.config import get_settings
    from memory_pipeline.consolidation.launch import run_dreaming, tenants_to_dream
    from memory_pipeline.definitions import defs
    from memory_pipeline.embedding import EMBEDDER_IDENTITY
    from memory_pipeline.orchestration.runs import local_instance, materialization_metadata

    settings = get_settings()
    tenants = tenant or list(tenants_to_dream(settings.lancedb_uri, EMBEDDER_IDENTITY[settings.embedder][1]))
    if not tenants:
        console.print("no tenant has 5 or more unpromoted episodes (name one with --tenant to dream anyway)")
        raise typer.Exit(0)
    for result, key in zip(run_dreaming(defs, local_instance(), tenants), tenants):
        values = materialization_metadata(result).get("dreaming", {})
        console.print(f"{key}: promoted {values.get('episodes_promoted', 0)} episode(s), added {values.get('lines_added', 0)} line(s)")


def episodes_command(
    agent: str = typer.Argument(...),
    user: str = typer.Argument(...),
    limit: int = typer.Option(20, help="How many, newest first."),
) -> None:
    """List a tenant's episodes: when, how they were summarized, abstract."""
    from memory_pipeline.config import get_settings
    from memory_pipeline.consolidation.store import ConsolidationStore
    from memory_pipeline.embedding import EMBEDDER_IDENTITY
    from memory_pipeline.tenancy import Tenant

    settings = get_settings()
    store = ConsolidationStore(settings.lancedb_uri, EMBEDDER_IDENTITY[settings.embedder][1])
    rows = store.episode_rows(Tenant(agent, user).key).sort("completed_at", descending=True).head(limit)
    table = Table()
    for column in ("completed", "session", "path", "promoted", "abstract"):
        table.add_column(column)
    for r in rows.iter_rows(named=True):
        table.add_row(f"{r['completed_at']:%Y-%m-%d %H:%M}", r["session_id"], r["produced_by"], "yes" if r["promoted_at"] else "", r["l0_abstract"])
    console.print(table)


def flush_command(
    agent: str = typer.Argument(...),
    user: str = typer.Argument(...),
    messages: Path = typer.Option(None, "--messages", "-m", help="JSON list of {role, content}; default: stdin."),
) -> None:
    """Append the key facts, preferences, decisions and action items of messages to today's note."""
    from memory_pipeline.consolidation.flush import flush

    data = json.loads(messages.read_text(encoding="utf-8") if messages else sys.stdin.read())
    result = flush(data, agent, user)
    console.print(f"{result.path}: added {result.total} line(s) {dict(result.added)}, {result.skipped_duplicates} already there")


def register(app: typer.Typer) -> None:
    app.command("consolidate")(consolidate_command)
    app.command("dream")(dream_command)
    app.command("episodes")(episodes_command)
    app.command("flush")(flush_command)
