"""The consolidation part of ``memory-pipeline demo``: episodes, graph facts and a dreamed file
from the sample transcripts, and the dreamed file indexed back into L0."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table


def demo_consolidation(console: Console, defs, instance, tenant_keys: list[str]) -> None:
    from memory_pipeline.config import get_settings
    from memory_pipeline.consolidation.launch import (
        completed_partitions,
        run_consolidation,
        run_dreaming,
        tenants_to_dream,
    )
    from memory_pipeline.consolidation.store import ConsolidationStore
    from memory_pipeline.embedding import EMBEDDER_IDENTITY
    from memory_pipeline.orchestration.runs import run_partitioned_job

    settings = get_settings()
    dim = EMBEDDER_IDENTITY[settings.embedder][1]
    console.rule("[bold]Consolidation: sessions -> episodes -> knowledge graph")
    partitions = completed_partitions(settings.root, settings.session_idle_minutes, tenant_keys)
    run_consolidation(defs, instance, partitions)
    console.print(f"{len(partitions)} day x tenant partitions consolidated")
    store = ConsolidationStore(settings.lancedb_uri, dim)
    for key in sorted({t for _, t in partitions}):
        episodes = store.episode_rows(key).sort("completed_at")
        table = Table(title=f"episodes of {key}", show_lines=False)
        for column in ("completed", "written by", "abstract", "topics"):
            table.add_column(column)
        for r in episodes.iter_rows(named=True):
            table.add_row(f"{r['completed_at']:%Y-%m-%d}", r["produced_by"], r["l0_abstract"][:110], ", ".join(r["key_topics"][:4]))
        console.print(table)

    focus = "support-bot~alice" if "support-bot~alice" in tenant_keys else (tenant_keys[0] if tenant_keys else None)
    if focus:
        relations = store.relation_rows(focus, "confidence >= 0.6").sort("valid_from")
        names = {r["id"]: r["name"] for r in store.entity_rows(focus).iter_rows(named=True)}
        table = Table(title=f"graph facts of {focus} (valid_to closed by later statements)")
        for column in ("subject", "predicate", "object", "valid from", "valid to", "cited"):
            table.add_column(column)
        for r in relations.iter_rows(named=True):
            table.add_row(
                names.get(r["subject_id"], r["subject"]), r["predicate"], names.get(r["object_id"], r["object"]),
                f"{r['valid_from']:%Y-%m-%d}" if r["valid_from"] else "", f"{r['valid_to']:%Y-%m-%d}" if r["valid_to"] else "now",
                f"{r['path'].rsplit('/', 1)[-1]}#L{r['line']}",
            )
        console.print(table)
        merges = store.merge_rows(focus)
        for r in merges.iter_rows(named=True):
            console.print(f"  entity {r['status']}: {r['from_name']!r} -> {r['into_name']!r} ({r['reason']})")

    console.rule("[bold]Dreaming: >= 5 unpromoted episodes -> long-term Markdown")
    due = list(tenants_to_dream(settings.lancedb_uri, dim))
    if not due:
        console.print("no tenant has 5 unpromoted episodes (already dreamed on an earlier run)")
    for result, key in zip(run_dreaming(defs, instance, due), due):
        for event in result.get_asset_materialization_events():
            meta = event.step_materialization_data.materialization.metadata
            console.print(f"{key}: promoted {meta['episodes_promoted'].value} episodes, +{meta['lines_added'].value} lines")
    for path in sorted(Path(settings.root).glob("*/users/*/memory/_system/dreaming/*-consolidated.md")):
        console.print(f"[bold]dreamed file {path}[/]")
        console.print(path.read_text(encoding="utf-8")[:2500], markup=False)
    if due:
        result = run_partitioned_job(defs, "l0_index_job", instance, due)
        console.print(f"L0 index run for {', '.join(due)}: {'success' if result.success else 'FAILED'} (the dreamed file is now searchable)")
