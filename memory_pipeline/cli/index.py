"""The L0 index commands: ``ingest`` (chunk, embed, index) and ``tenants`` (what the workspace holds)."""

from __future__ import annotations

import time

import typer

from memory_pipeline.cli import options, runs
from memory_pipeline.cli.app import app
from memory_pipeline.cli.output import print_json, say, summary_table
from memory_pipeline.cli.tenants import select_tenants


@app.command()
def ingest(
    agent: list[str] = options.AGENTS,
    user: list[str] = options.USERS,
    every: bool = options.ALL,
    as_json: bool = options.JSON,
) -> None:
    """Index tenants' notes and transcripts (chunk, embed, LanceDB) with the l0_index_job Dagster job."""
    from memory_pipeline.config import get_settings
    from memory_pipeline.orchestration.runs import run_partitioned_jobs
    from memory_pipeline.sources.workspace import tenant_folder_skips

    keys = select_tenants(agent, user, every)
    started = time.perf_counter()
    with runs.progress("indexing", None, "runs") as bars:
        results = run_partitioned_jobs(runs.defs(), "l0_index_job", runs.instance(), keys, run_config=runs.run_config())
        bars.advance(len(results))
    summary = runs.summarize(results, keys, started)
    # Folders that look like tenants but are not indexed (an invalid id, a name holding a secret).
    summary["tenant_folders_skipped"] = [
        {"path": path, "reason": reason} for path, reason in tenant_folder_skips(get_settings().root)
    ]
    if as_json:
        print_json(summary)
    else:
        runs.print_summary("ingest", summary)
        for skip in summary["tenant_folders_skipped"]:
            say(f"skipped folder {skip['path']}: {skip['reason']}")


@app.command("tenants")
def tenants_command(as_json: bool = options.JSON) -> None:
    """The tenants the workspace holds (agent, user) and their partition keys."""
    from memory_pipeline.config import get_settings
    from memory_pipeline.tenancy import Tenant

    keys = select_tenants(None, None, True)
    rows = [{"agent": t.agent_id, "user": t.user_id, "key": t.key} for t in map(Tenant.from_key, keys)]
    if as_json:
        print_json(rows)
        return
    summary_table(f"tenants under {get_settings().root}", ("agent", "user", "partition key"),
                  [(r["agent"], r["user"], r["key"]) for r in rows])


@app.command("partitions")
def partitions_command(
    prune: bool = typer.Option(False, "--prune", help="Remove the stale partitions from the Dagster instance."),
    register: bool = typer.Option(False, "--register", help="Add a partition for every tenant of the workspace."),
    as_json: bool = options.JSON,
) -> None:
    """Tenant partitions of the Dagster instance that name no tenant of the workspace (a key added
    by hand, a tenant whose folder and indexed rows are gone); --prune removes them, --register
    adds the workspace's tenants (what the workspace sensor does on its first tick)."""
    from memory_pipeline.config import get_settings
    from memory_pipeline.l0.store import ChunkIndex
    from memory_pipeline.orchestration.runs import register_tenants
    from memory_pipeline.orchestration.tenant_keys import remove_partitions, stale_partitions, workspace_partitions

    settings = get_settings()
    instance = runs.instance()
    registered = (
        {name: register_tenants(instance, keys, name) for name, keys in workspace_partitions(settings.root).items()}
        if register else {}
    )
    store = ChunkIndex(settings.lancedb_uri)
    stale = stale_partitions(instance, settings.root, settings.teams, store.holds_tenant)
    rows = [{"partitions": name, "key": key, "reason": why} for name, keys in stale.items() for key, why in keys.items()]
    removed = remove_partitions(instance, stale) if prune else 0
    if as_json:
        print_json({"stale": rows, "removed": removed, "registered": registered})
        return
    for name, keys in registered.items():
        say(f"{name}: {len(keys)} registered" + (f" ({', '.join(keys[:10])})" if keys else ""))
    if not rows:
        say("no stale partitions")
        return
    summary_table("stale partitions" + (" (removed)" if prune else ""), ("partitions", "key", "reason"),
                  [(r["partitions"], r["key"], r["reason"]) for r in rows])
    say(f"{removed} removed" if prune else "run with --prune to remove them")
