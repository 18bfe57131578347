"""``forget-tenant``: the right to be forgotten, from the command line."""

from __future__ import annotations

import typer

from memory_pipeline.cli import options
from memory_pipeline.cli.app import BadInput, app
from memory_pipeline.cli.output import console, print_json, say


@app.command("forget-tenant")
def forget_tenant_command(
    agent: str = options.AGENT,
    user: str = typer.Option(None, "--user", "-u", help="Only this user (default: the agent and all its users)."),
    yes: bool = typer.Option(False, "--yes", help="Confirm: this cannot be undone."),
    delete_sources: bool = typer.Option(
        False, "--delete-sources", help="Also delete the workspace files (notes, transcripts) of the tenant."
    ),
    wait: float = typer.Option(
        300.0, "--wait", min=0, help="Seconds to let the tenant's runs in flight finish before giving up."
    ),
    as_json: bool = options.JSON,
) -> None:
    """Forget a user (or a whole agent): every row in every table, every file the pipeline wrote."""
    from memory_pipeline.config import get_settings
    from memory_pipeline.forget import forget_tenant
    from memory_pipeline.orchestration.resources import default_resources
    from memory_pipeline.orchestration.runs import local_instance
    from memory_pipeline.tenancy import validate_id

    validate_id(agent, "agent id")
    if user is not None:
        validate_id(user, "user id")
    who = f"user {user!r} of agent {agent!r}" if user else f"agent {agent!r} and every one of its users"
    if not yes:
        raise BadInput(f"this deletes all memory of {who} and cannot be undone; run again with --yes")
    # A tenant whose files are already deleted is still forgettable (its rows, partitions and runs
    # remain); one known nowhere is refused with the known users (UnknownTenantError, exit 2).
    settings = get_settings()
    io_manager = default_resources()["io_manager"]
    report = forget_tenant(
        agent, user, root=settings.root, lancedb_uri=settings.lancedb_uri,
        io_dir=io_manager.storage_folder(), instance=local_instance(), delete_sources=delete_sources,
        wait_for_runs_s=wait,
    )
    if as_json:
        print_json(report.to_dict())
        return
    say(f"forgot {who}: tenants {', '.join(report.tenants)}")
    if report.runs_waited_for:
        say(f"  runs in flight waited for first: {len(report.runs_waited_for)}")
    for name, count in sorted(report.rows_deleted.items()):
        say(f"  {name}: {count} row(s) deleted")
    say(f"  embedding_cache: {report.cache_rows_deleted} vector(s) no other tenant uses deleted")
    say(f"  files the pipeline wrote, deleted: {len(report.files_deleted)}")
    say(f"  partitions deleted: {len(report.partitions_deleted)}, runs deleted: {report.runs_deleted}")
    say(
        f"  runs shared with other tenants, kept for them: {report.runs_split} ({report.events_deleted} record(s) "
        f"of the tenant deleted, {report.events_rewritten} record(s) of others stripped of shared text); "
        f"compute logs deleted: {report.compute_logs_deleted} run(s)"
    )
    if report.sources_left:
        console().print(
            f"[yellow]{len(report.sources_left)} workspace file(s) written by a person or agent remain "
            "(the next index run reads them again); delete them or rerun with --delete-sources:[/]"
        )
        for path in report.sources_left[:20]:
            say(f"    {path}")
