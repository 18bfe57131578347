"""Consolidation commands: ``consolidate``, ``dream``, ``episodes`` and ``flush``."""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import typer

from memory_pipeline.cli import options, runs
from memory_pipeline.cli.app import BadInput, app
from memory_pipeline.cli.output import print_json, say, summary_table
from memory_pipeline.cli.tenants import require_tenant, select_tenants

_DAY_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _days(values: list[str] | None) -> set[str]:
    from datetime import date

    for value in values or []:
        try:
            if not _DAY_RE.match(value):
                raise ValueError
            date.fromisoformat(value)
        except ValueError:
            raise BadInput(f"--day {value!r}: use a date as YYYY-MM-DD") from None
    return set(values or [])


@app.command("consolidate")
def consolidate_command(
    agent: list[str] = options.AGENTS,
    user: list[str] = options.USERS,
    every: bool = options.ALL,
    day: list[str] = typer.Option(None, "--day", "-d", help="Only sessions completed on this day (YYYY-MM-DD); repeatable."),
    again: bool = typer.Option(False, "--again", help="Consolidate again the sessions consolidated already (after a change of model or rules)."),
    as_json: bool = options.JSON,
) -> None:
    """Consolidate completed sessions not consolidated yet into episodes and the knowledge graph
    (many tenants in one run)."""
    from memory_pipeline.config import get_settings
    from memory_pipeline.consolidation.assets import scope_config
    from memory_pipeline.consolidation.launch import completed_tenants

    days = _days(day)
    keys = select_tenants(agent, user, every)
    settings = get_settings()
    tenants = completed_tenants(settings.root, settings.session_idle_minutes, keys, days)
    started = time.perf_counter()
    scope = scope_config(sorted(days), again=again)
    results, planned = runs.consolidate(runs.defs(), runs.instance(), tenants, scope) if tenants else ([], [])
    summary = runs.summarize(results, tenants, started, {"ranges": [run.label for run in planned]})
    if as_json:
        print_json(summary)
    elif not tenants:
        say("no completed session to consolidate")
    else:
        episodes = summary["assets"].get("episodic_summaries", {})
        runs.print_summary(
            f"consolidate: {episodes.get('sessions_complete', 0)} session(s) consolidated, "
            f"{episodes.get('sessions_unchanged', 0)} unchanged",
            summary,
        )


@app.command("dream")
def dream_command(
    agent: list[str] = options.AGENTS,
    user: list[str] = options.USERS,
    every: bool = typer.Option(False, "--all", help="Every tenant with 5 or more unpromoted episodes (the default)."),
    force: bool = typer.Option(False, "--force", help="Dream the named tenants even below 5 unpromoted episodes or within 10 minutes of their last dreaming run."),
    as_json: bool = options.JSON,
) -> None:
    """Promote unpromoted episodes into each tenant's _system/dreaming/YYYYMMDD-consolidated.md and
    index it, so it is searchable at once. A tenant dreams, as the sensor decides, with 5 or more
    unpromoted episodes and not within 10 minutes of its last dreaming run (--force: anyway)."""
    from datetime import UTC, datetime

    from memory_pipeline.config import get_settings
    from memory_pipeline.consolidation.store import ConsolidationStore
    from memory_pipeline.embedding import EMBEDDER_IDENTITY
    from memory_pipeline.episodes.dream_rules import plan_dreaming

    settings = get_settings()
    named = select_tenants(agent, user, every) if agent or user else None
    if force and named is None:
        raise BadInput("--force dreams named tenants: give --agent/--user")
    if force:
        keys, waiting = named, {}
    else:
        found = ConsolidationStore(settings.lancedb_uri, EMBEDDER_IDENTITY[settings.embedder][1]).unpromoted_counts()
        counts = {tenant: found.get(tenant, 0) for tenant in (sorted(found) if named is None else named)}
        keys, _, waiting = plan_dreaming(counts, {}, datetime.now(UTC))
    started = time.perf_counter()
    results = []
    if keys:  # Dagster is loaded only for a tenant to dream: to run it, and to see whether it ran lately
        from memory_pipeline.consolidation.launch import plan_dreams, run_dreaming
        from memory_pipeline.orchestration.runs import run_partitioned_jobs

        defs, instance = runs.defs(), runs.instance()
        if not force:
            keys, waiting = plan_dreams(instance, counts, datetime.now(UTC))
    if keys:
        with runs.progress("dreaming", len(keys), "tenants") as bars:
            for key in keys:
                results += run_dreaming(defs, instance, [key], run_config=runs.run_config())
                bars.advance(1)
        # The dreamed documents indexed now: searchable without a separate ingest.
        dreamed = [key for key, result in zip(keys, results, strict=True) if result.success]
        if dreamed:
            with runs.progress("indexing the dreamed documents", None, "runs"):
                results += run_partitioned_jobs(defs, "l0_index_job", instance, dreamed, run_config=runs.run_config())
    summary = runs.summarize(results, keys, started, {"waiting": waiting})
    if as_json:
        print_json(summary)
        return
    for tenant, why in waiting.items():
        say(f"{tenant} not dreamed: {why} (--force to dream it anyway)")
    if not keys:
        say("no tenant to dream" if waiting else "no tenant has unpromoted episodes")
    else:
        runs.print_summary("dream", summary)


@app.command("episodes")
def episodes_command(
    agent: str = options.AGENT,
    user: str = options.USER,
    limit: int = options.limit(20, "How many, newest first."),
    as_json: bool = options.JSON,
) -> None:
    """List a tenant's episodes: when, how they were summarized, abstract."""
    from memory_pipeline.config import get_settings
    from memory_pipeline.recall.index.kept_reads import read_tenants
    from memory_pipeline.store.tables import EPISODES
    from memory_pipeline.tenancy import Tenant

    agent, user = require_tenant(agent, user)
    columns = ["completed_at", "session_id", "produced_by", "promoted_at", "l0_abstract", "key_topics"]
    rows = read_tenants(get_settings().lancedb_uri, EPISODES, Tenant(agent, user).key, columns)
    rows = rows.sort("completed_at", descending=True).head(limit)
    episodes = [
        {"completed_at": r["completed_at"], "session_id": r["session_id"], "produced_by": r["produced_by"],
         "promoted": r["promoted_at"] is not None, "abstract": r["l0_abstract"], "key_topics": r["key_topics"]}
        for r in rows.iter_rows(named=True)
    ]
    if as_json:
        print_json(episodes)
        return
    summary_table(
        f"episodes of {agent}/{user}", ("completed", "session", "by", "promoted", "abstract"),
        [(f"{e['completed_at']:%Y-%m-%d %H:%M}", e["session_id"], e["produced_by"], "yes" if e["promoted"] else "",
          e["abstract"]) for e in episodes],
    )


@app.command("flush")
def flush_command(
    agent: str = options.AGENT,
    user: str = options.USER,
    messages: Path = typer.Option(None, "--messages", "-m", help="A JSON list of {role, content}; default: stdin."),
    as_json: bool = options.JSON,
) -> None:
    """Append the key facts, preferences, decisions and action items of messages to today's note."""
    from memory_pipeline.episodes.flush import flush

    agent, user = require_tenant(agent, user)
    data = _read_messages(messages)
    result = flush(data, agent, user)
    summary = {"path": str(result.path), "added": dict(result.added), "lines_added": result.total,
               "skipped_duplicates": result.skipped_duplicates, "secrets_redacted": result.secrets_redacted}
    if as_json:
        print_json(summary)
        return
    say(f"{result.path}: added {result.total} line(s) {dict(result.added)}, {result.skipped_duplicates} already there")


def _read_messages(path: Path | None) -> list:
    where = str(path) if path else "stdin"
    try:
        raw = path.read_bytes() if path else sys.stdin.buffer.read()
        data = json.loads(raw.decode("utf-8"))
    except OSError as exc:
        raise BadInput(f"--messages {where}: cannot read it ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise BadInput(f"{where} is not UTF-8 text: give a JSON list of {{role, content}}") from None
    except json.JSONDecodeError as exc:
        raise BadInput(f"{where} is not JSON ({exc.msg} at line {exc.lineno}): give a list of {{role, content}}") from None
    if not isinstance(data, list):
        raise BadInput(f"{where} holds a JSON {type(data).__name__}: give a list of {{role, content}} objects")
    return data
