"""``memory-pipeline demo``: every asset on the sample workspace, then a cited recall."""

from __future__ import annotations

import time

from rich.console import Console
from rich.table import Table

from memory_pipeline.config import get_settings


def run_demo(console: Console, *, query: str, agent: str, user: str) -> None:
    from memory_pipeline.definitions import defs
    from memory_pipeline.orchestration.runs import (
        discover_tenants,
        local_instance,
        materialization_metadata,
        run_partitioned_job,
    )
    from memory_pipeline.recall.search import search

    settings = get_settings()
    instance = local_instance()
    keys = discover_tenants(settings.root)
    console.rule("[bold]L0 index")
    console.print(f"workspace {settings.root}: {len(keys)} tenants ({', '.join(keys)})")
    console.print(f"Dagster instance {instance.root_directory}, LanceDB {settings.lancedb_uri}")
    started = time.perf_counter()
    result = run_partitioned_job(defs, "l0_index_job", instance, keys)
    console.print(f"run {result.run_id[:8]}: {'success' if result.success else 'FAILED'} in {time.perf_counter() - started:.1f} s")
    for asset, values in materialization_metadata(result).items():
        console.print(f"  {asset}: " + ", ".join(f"{k}={v}" for k, v in values.items()))

    for step in _extra_steps():
        step(console, defs, instance, keys)

    console.rule(f"[bold]Recall for {agent}/{user}")
    console.print(f"query: {query!r}")
    results = search(query, agent, user)
    table = Table(show_lines=True)
    table.add_column("#")
    table.add_column("score")
    table.add_column("citation", overflow="fold", min_width=24)
    table.add_column("snippet")
    for i, r in enumerate(results, 1):
        table.add_row(str(i), f"{r.score:.3f}", r.citation, r.snippet[:300])
    console.print(table)
    if not results:
        console.print("no result above the minimum score")


def _extra_steps():
    """Later stages of the pipeline shown by the demo, when they are part of this build."""
    steps = []
    try:
        from memory_pipeline.consolidation.demo import demo_consolidation

        steps.append(demo_consolidation)
    except ModuleNotFoundError:
        pass
    return steps
