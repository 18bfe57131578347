"""The ``memory-pipeline`` command line.

Each feature module contributes its commands through a ``register(app)`` function, so this file
only wires them together and holds the pipeline-wide commands (``ingest``, ``demo``).
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import typer  # noqa: E402
from rich.console import Console  # noqa: E402

# Plain tracebacks: rich took minutes to render a failed run's chained Dagster traceback (the
# process looked hung), and its locals would print memory text.
app = typer.Typer(
    no_args_is_help=True, add_completion=False, help="Long-term memory for LLM agents.", pretty_exceptions_enable=False
)
console = Console()
err = Console(stderr=True)

FEATURE_MODULES = (
    "memory_pipeline.recall.cli",
    "memory_pipeline.consolidation.cli",
    "memory_pipeline.graph.cli",
    "memory_pipeline.mcp_server",
    "memory_pipeline.forget",
)


def fail(message: str, code: int = 2) -> None:
    err.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(code)


@app.command()
def ingest(
    tenant: list[str] = typer.Option(None, "--tenant", "-t", help="Tenant key <agent>~<user>; default: every tenant found."),
    root: str = typer.Option(None, help="Workspace root (default MEMORY_PIPELINE_ROOT or data/agents)."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON summary."),
) -> None:
    """Run the L0 index job (chunk, embed, index) for tenants, as one Dagster run."""
    from memory_pipeline.config import get_settings
    from memory_pipeline.definitions import defs
    from memory_pipeline.orchestration.runs import discover_tenants, local_instance, run_partitioned_job

    root = root or get_settings().root
    if root != get_settings().root:
        os.environ["MEMORY_PIPELINE_ROOT"] = root
        get_settings.cache_clear()
    keys = tenant or discover_tenants(root)
    if not keys:
        fail(f"no tenants found under {root!r}: expected <agent>/MEMORY.md, <agent>/users/<user>/ or <agent>/sessions/<user>/")
    started = time.perf_counter()
    instance = local_instance()
    result = run_partitioned_job(defs, "l0_index_job", instance, keys)
    summary = _run_summary(result)
    summary["seconds"] = round(time.perf_counter() - started, 2)
    if as_json:
        print(json.dumps(summary, indent=2, default=str))
    else:
        console.print(f"indexed {len(keys)} tenant(s) in run {result.run_id[:8]} ({summary['seconds']} s)")
        for key, value in summary["metadata"].items():
            console.print(f"  {key}: {value}")


def _run_summary(result) -> dict:
    from memory_pipeline.orchestration.runs import materialization_metadata

    metadata = {
        f"{asset}.{key}": value
        for asset, values in materialization_metadata(result).items()
        for key, value in values.items()
        if not key.endswith("seconds")
    }
    checks = {
        ev.asset_check_evaluation_data.check_name: ev.asset_check_evaluation_data.passed
        for ev in result.all_events
        if ev.event_type_value == "ASSET_CHECK_EVALUATION"
    }
    return {"run_id": result.run_id, "success": result.success, "metadata": metadata, "checks": checks}


@app.command()
def demo(
    query: str = typer.Option("What is the refund policy for annual plans?", help="The recall shown at the end."),
    agent: str = typer.Option("support-bot"),
    user: str = typer.Option("alice"),
) -> None:
    """Materialize every asset on the sample data in data/, then show a cited recall."""
    from memory_pipeline.demo import run_demo

    run_demo(console, query=query, agent=agent, user=user)


def _register_features() -> None:
    for name in FEATURE_MODULES:
        importlib.import_module(name).register(app)


def main() -> None:
    _register_features()
    try:
        app()
    except KeyboardInterrupt:  # pragma: no cover
        sys.exit(130)


if __name__ == "__main__":
    main()
