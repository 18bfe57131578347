"""``mcp``: serve one tenant's memory as MCP tools over stdio."""

from __future__ import annotations

import typer

from memory_pipeline.cli import options
from memory_pipeline.cli.app import app
from memory_pipeline.cli.tenants import require_tenant


@app.command("mcp")
def mcp_command(
    agent: str = options.AGENT,
    user: str = options.USER,
    read_only: bool = typer.Option(False, "--read-only", help="Refuse every write."),
) -> None:
    """Serve the memory of one agent and user as MCP tools over stdio (logs on stderr)."""
    from memory_pipeline.mcp_server import serve

    agent, user = require_tenant(agent, user)
    serve(agent, user, read_only)
