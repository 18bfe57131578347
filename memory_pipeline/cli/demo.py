"""``memory-pipeline demo``: every asset on the sample workspace, then a cited recall.

The L0 index, consolidation (episodes, graph facts), typed memories, dreaming and the dreamed file
indexed back, each stage's figures in a short table; Dagster's own logs stay off the terminal
(``-v`` shows them).
"""

from __future__ import annotations

from pathlib import Path

import typer

from memory_pipeline.cli import runs
from memory_pipeline.cli.app import app
from memory_pipeline.cli.output import clip, console, print_records, say, summary_table, superseded_label


PREVIEW_CHARS = 2500


def preview(text: str, limit: int) -> str:
    """The first whole lines of ``text`` within ``limit`` characters, and how many more there are
    (a preview cut mid-line read as a broken file)."""
    lines = text.splitlines()
    kept, size = [], 0
    for line in lines:
        if size + len(line) + 1 > limit and kept:
            break
        kept.append(line)
        size += len(line) + 1
    rest = len(lines) - len(kept)
    return "\n".join(kept) + (f"\n... {rest} more line(s)" if rest else "")


@app.command("demo")
def demo_command(
    query: str = typer.Option("What is the refund policy for annual plans?", "--query", help="The recall shown at the end."),
    agent: str = typer.Option("support-bot", "--agent", "-a", help="Agent of the recall shown at the end."),
    user: str = typer.Option("alice", "--user", "-u", help="User of the recall shown at the end."),
) -> None:
    """Materialize every asset on the sample data in data/, then show a cited recall."""
    import time

    from memory_pipeline.config import get_settings
    from memory_pipeline.recall.search import search
    from memory_pipeline.orchestration.runs import run_partitioned_jobs

    from memory_pipeline.cli.tenants import require_tenant, select_tenants

    agent, user = require_tenant(agent, user)
    settings = get_settings()
    defs, instance = runs.defs(), runs.instance()
    keys = select_tenants(None, None, True)
    console().rule("[bold]L0 index")
    say(f"workspace {settings.root}: {len(keys)} tenants ({', '.join(keys)})")
    say(f"Dagster instance {instance.root_directory}, LanceDB {settings.lancedb_uri}")
    started = time.perf_counter()
    with runs.progress("indexing", None, "runs"):
        results = run_partitioned_jobs(defs, "l0_index_job", instance, keys, run_config=runs.run_config())
    runs.print_summary("L0 index", runs.summarize(results, keys, started))

    _consolidation(defs, instance, keys, focus=f"{agent}~{user}")
    _typed_memories(defs, instance, keys, agent, user)

    console().rule(f"[bold]Recall for {agent}/{user}")
    say(f"query: {query!r}")
    results = search(query, agent, user)
    print_records("", [("  ".join(p for p in (f"{i}.", f"{r.score:.3f}", (r.when or "").removesuffix(" UTC"), r.citation) if p),
                        superseded_label(r.superseded) + clip(r.snippet, 300)) for i, r in enumerate(results, 1)])
    if not results:
        say("no result above the minimum score")


def _consolidation(defs, instance, tenant_keys: list[str], focus: str) -> None:
    """Episodes, graph facts and a dreamed file from the sample transcripts; the dreamed file
    is then indexed back into L0."""
    import time

    from memory_pipeline.config import get_settings
    from memory_pipeline.consolidation.launch import completed_tenants, run_dreaming, tenants_to_dream
    from memory_pipeline.consolidation.store import ConsolidationStore
    from memory_pipeline.embedding import EMBEDDER_IDENTITY
    from memory_pipeline.orchestration.runs import run_partitioned_jobs

    settings = get_settings()
    dim = EMBEDDER_IDENTITY[settings.embedder][1]
    console().rule("[bold]Consolidation: sessions -> episodes -> knowledge graph")
    tenants = completed_tenants(settings.root, settings.session_idle_minutes, tenant_keys)
    started = time.perf_counter()
    results, _ = runs.consolidate(defs, instance, tenants)  # many tenants per run, as the CLI and the sensor
    runs.print_summary(f"{len(tenants)} tenants consolidated in {len(results)} run(s)",
                       runs.summarize(results, tenants, started))
    store = ConsolidationStore(settings.lancedb_uri, dim)
    for key in tenants:
        episodes = store.episode_rows(key).sort("completed_at")
        summary_table(f"episodes of {key}", ("completed", "written by", "abstract", "topics"), [
            (f"{r['completed_at']:%Y-%m-%d}", r["produced_by"], clip(r["l0_abstract"], 110), ", ".join(r["key_topics"][:4]))
            for r in episodes.iter_rows(named=True)
        ])

    if focus in tenant_keys:
        relations = store.relation_rows(focus, "confidence >= 0.6").sort("valid_from")
        names = {r["id"]: r["name"] for r in store.entity_rows(focus).iter_rows(named=True)}
        summary_table(
            f"graph facts of {focus} (valid_to closed by later statements)",
            ("subject", "predicate", "object", "valid from", "valid to", "cited"),
            [(names.get(r["subject_id"], r["subject"]), r["predicate"], names.get(r["object_id"], r["object"]),
              f"{r['valid_from']:%Y-%m-%d}" if r["valid_from"] else "",
              f"{r['valid_to']:%Y-%m-%d}" if r["valid_to"] else "now",
              f"{r['path'].rsplit('/', 1)[-1]}#L{r['line']}") for r in relations.iter_rows(named=True)],
        )
        for r in store.merge_rows(focus).iter_rows(named=True):
            say(f"  entity {r['status']}: {r['from_name']!r} -> {r['into_name']!r} ({r['reason']})")

    console().rule("[bold]Dreaming: >= 5 unpromoted episodes -> long-term Markdown")
    due = list(tenants_to_dream(settings.lancedb_uri, dim))
    if not due:
        say("no tenant has 5 unpromoted episodes (already dreamed on an earlier run)")
    for key in due:
        for result in run_dreaming(defs, instance, [key], run_config=runs.run_config()):
            for event in result.get_asset_materialization_events():
                meta = event.step_materialization_data.materialization.metadata
                say(f"{key}: promoted {meta['episodes_promoted'].value} episodes, +{meta['lines_added'].value} lines")
    for path in sorted(Path(settings.root).glob("*/users/*/memory/_system/dreaming/*-consolidated.md")):
        say(f"dreamed file {path}")
        say(preview(path.read_text(encoding="utf-8"), PREVIEW_CHARS))
    if due:
        results = run_partitioned_jobs(defs, "l0_index_job", instance, due, run_config=runs.run_config())
        ok = all(r.success for r in results)
        say(f"L0 index run for {', '.join(due)}: {'success' if ok else 'FAILED'} (the dreamed file is now searchable)")


def _typed_memories(defs, instance, tenant_keys: list[str], agent: str, user: str) -> None:
    """Typed memories extracted from every tenant's notes and transcripts (what ``memories stats``,
    ``memories query`` and ``context`` read), the reader's counts and working memory."""
    import time

    from memory_pipeline.memories.service import MemoryService
    from memory_pipeline.orchestration.runs import run_partitioned_jobs

    console().rule("[bold]Typed memories: notes and transcripts -> identity, preferences, todos, ...")
    started = time.perf_counter()
    with runs.progress("extracting typed memories", None, "runs"):
        results = run_partitioned_jobs(defs, "typed_memories_job", instance, tenant_keys, run_config=runs.run_config())
    runs.print_summary("typed memories", runs.summarize(results, tenant_keys, started))
    service = MemoryService(agent, user, actor="demo")
    stats = service.stats()
    say(f"{agent}/{user}: {stats['memories']} typed memories ("
        + ", ".join(f"{k} {v}" for k, v in stats["by_type"].items() if v) + ")")
    say(f"\nworking memory of {agent}/{user} (memory-pipeline context --budget 400):")
    say(service.context(token_budget=400).markdown)
