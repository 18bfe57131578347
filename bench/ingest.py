"""Ingest benchmark: the whole L0 pipeline through real Dagster runs vs. the bare embedder.

On a generated workspace (default 2,000 files, about 5 MB of Markdown and transcripts), in one
invocation:

1. bare: chunk every file the way the pipeline does, then time only ``MiniLMEmbedder.embed`` on
   the chunk texts (the baseline: what the embedding model alone costs); outside ``--quick``,
   once before the full ingest and once after it, the baseline being their mean time, so that
   the model's speed drifting between passes (5 % in one run) does not land on one side of the
   ratio;
2. full: one Dagster run of ``l0_index_job`` over every tenant on a fresh instance and LanceDB
   (scan, read, scrub, chunk, cache lookup, embed, write, full-text index, asset checks);
3. rerun: the same job again with nothing changed;
4. 1% changed: a paragraph appended to 1% of the files (at least one), and the job again;
5. sensor: one tick of the workspace sensor over the files;
6. the no-change rerun again with the instance on a new database of the local PostgreSQL server,
   through the storage ``deploy/dagster.yaml`` names, as production stores its events (twice:
   the first run meets an instance without history; the second is the one reported).

``--quick`` (60 files) runs the first three only: the ratios ``bench/baseline.json`` guards.

Each phase runs in its own process so its peak RSS is its own. Prints ratios (bare/full
throughput, rerun/full and 1%-changed/full time) and writes ``bench/results/ingest.json``.

    python bench/ingest.py [--files 2000] [--tenants 20] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench import command_line, work_offline, write_report  # noqa: E402

work_offline()

WORDS = (
    "agent memory project deploy billing customer invoice migration postgres schema index query "
    "latency budget meeting review decision preference timezone report release incident ticket "
    "support escalation roadmap quarter design prototype feedback contract renewal onboarding "
    "training dashboard metric alert pipeline backfill partition sensor schedule vector search "
    "embedding summary episode graph entity relation weekly planning retro hiring interview offer"
).split()
NAMES = ["Alice", "Bob", "Carol", "Dana", "Evan", "Fiona", "Tomas", "Priya", "Marco", "Lena"]


def sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(8, 20))]
    words[0] = words[0].capitalize()
    if rng.random() < 0.4:
        words.insert(rng.randint(1, len(words) - 1), rng.choice(NAMES))
    return " ".join(words) + "."


def markdown_file(rng: random.Random, target: int) -> str:
    parts = [f"# Notes {rng.randint(1, 999)}", ""]
    while sum(len(p) + 1 for p in parts) < target:
        kind = rng.random()
        if kind < 0.15:
            parts += [f"## {rng.choice(WORDS).capitalize()} {rng.choice(WORDS)}", ""]
        elif kind < 0.35:
            parts += [f"- {sentence(rng)}" for _ in range(rng.randint(2, 5))] + [""]
        elif kind < 0.40:
            parts += ["```bash", f"memory-pipeline search '{rng.choice(WORDS)}'", "```", ""]
        else:
            parts += [" ".join(sentence(rng) for _ in range(rng.randint(2, 6))), ""]
    return "\n".join(parts)


def transcript_file(rng: random.Random, turns: int) -> str:
    lines = []
    ts = 1_762_000_000 + rng.randint(0, 10_000_000)
    for i in range(1, turns + 1):
        ts += rng.randint(20, 90)
        role = "user" if i % 2 else "assistant"
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))
        lines.append(json.dumps({"role": role, "content": " ".join(sentence(rng) for _ in range(rng.randint(1, 3))), "ts": stamp, "turn_id": f"t{i}"}))
    lines.append(json.dumps({"type": "session.completed", "ts": stamp}))
    return "\n".join(lines) + "\n"


def generate(root: Path, files: int, tenants: int, seed: int = 7) -> dict:
    rng = random.Random(seed)
    total = 0
    for i in range(files):
        agent = f"agent{i % 2}"
        user = f"user{(i // 2) % max(1, tenants // 2)}"
        if i % 5 == 4:
            path = root / agent / "sessions" / user / f"s{i}.jsonl"
            text = transcript_file(rng, rng.randint(6, 16))
        elif i % 7 == 0:
            path = root / agent / "users" / user / "memory" / f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}-{i}.md"
            text = markdown_file(rng, rng.randint(1200, 3500))
        else:
            path = root / agent / "users" / user / "memory" / f"topic-{i}.md"
            text = markdown_file(rng, rng.randint(1200, 3500))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        total += len(text.encode())
    return {"files": files, "bytes": total}


def change_files(root: Path, share: float, seed: int = 11) -> dict:
    """Append a new paragraph to ``share`` of the Markdown files (at least one)."""
    rng = random.Random(seed)
    notes = sorted(root.rglob("*.md"))
    picked = rng.sample(notes, max(1, round(len(notes) * share)))
    for path in picked:
        with path.open("a") as fh:
            fh.write("\n## Update\n\n" + " ".join(sentence(rng) for _ in range(4)) + "\n")
    return {"files_changed": len(picked)}


def phase_bare(root: Path) -> dict:
    from memory_pipeline.config import get_settings
    from memory_pipeline.embedding import MiniLMEmbedder
    from memory_pipeline.l0.pipeline import prepare_tenant
    from memory_pipeline.l0.store import ChunkIndex
    from memory_pipeline.sources.workspace import scan_workspace

    scan = scan_workspace(root)
    settings = get_settings()
    # A store of its own for each pass (its manifest would skip the files a pass before read), removed with the workspace.
    store = ChunkIndex(tempfile.mkdtemp(prefix="bare-store-", dir=Path(root).parent), dim=384)
    texts = []
    for tenant in scan.tenants:
        batch = prepare_tenant(store, root, tenant, settings, "bare", files=scan.files[tenant])
        texts += batch.chunks["text"].to_list()
    texts = list(dict.fromkeys(texts))  # the pipeline embeds each distinct text once, too
    embedder = MiniLMEmbedder()
    embedder.embed(texts[:64])  # warm-up, as the pipeline's model is warm after loading
    started = time.perf_counter()
    embedder.embed(texts)
    seconds = time.perf_counter() - started
    tokens = sum(len(embedder.model.tokenizer(t, truncation=True, max_length=256)["input_ids"]) for t in texts)
    return {"texts": len(texts), "tokens": tokens, "seconds": seconds}


def phase_pipeline(root: Path, lance: Path, home: Path) -> dict:
    os.environ["MEMORY_PIPELINE_ROOT"] = str(root)
    os.environ["MEMORY_PIPELINE_LANCEDB_URI"] = str(lance)
    os.environ["DAGSTER_HOME"] = str(home)
    from memory_pipeline.definitions import defs
    from memory_pipeline.orchestration.runs import (
        discover_tenants,
        local_instance,
        materialization_metadata,
        run_partitioned_job,
    )

    instance = local_instance(home)
    keys = discover_tenants(root)
    started = time.perf_counter()
    result = run_partitioned_job(defs, "l0_index_job", instance, keys)
    seconds = time.perf_counter() - started
    meta = {f"{asset}.{k}": v for asset, values in materialization_metadata(result).items() for k, v in values.items()}
    return {"seconds": seconds, "tenants": len(keys), "success": result.success, "metadata": meta}


def phase_sensor(root: Path, home: Path) -> dict:
    os.environ["DAGSTER_HOME"] = str(home)
    import dagster as dg

    from memory_pipeline.l0.sensors import workspace_sensor
    from memory_pipeline.orchestration.resources import WorkspaceResource

    with dg.instance_for_test() as instance:
        context = dg.build_sensor_context(instance=instance, resources={"workspace": WorkspaceResource(root=str(root))})
        started = time.perf_counter()
        result = workspace_sensor(context)
        seconds = time.perf_counter() - started
    return {"seconds": seconds, "run_requests": len(result.run_requests)}


def rerun_on_postgres(root: Path, lance: Path, home: Path) -> dict | None:
    """The no-change rerun on a new PostgreSQL database (None without a server): a first run
    registers the tenants and gives the instance a history, the second is returned."""
    from bench.postgres import postgres_database
    from memory_pipeline.orchestration.runs import instance_config

    with postgres_database() as storage:
        if storage is None:
            return None
        home.mkdir(parents=True, exist_ok=True)
        (home / "dagster.yaml").write_text(instance_config(storage))
        run_phase("pipeline", str(root), str(lance), str(home))
        return run_phase("pipeline", str(root), str(lance), str(home))


def run_phase(name: str, *args: str) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--phase", name, *args], capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        sys.stderr.write(out.stderr[-4000:])
        raise SystemExit(f"phase {name} failed")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = command_line(__doc__, "ingest")
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--tenants", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="60 files, without the 1%%-changed run and the sensor tick")
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--args", nargs="*", help=argparse.SUPPRESS)
    opts, rest = parser.parse_known_args()
    if opts.phase:
        paths = [Path(p) for p in rest]
        result = {"bare": phase_bare, "pipeline": phase_pipeline, "sensor": phase_sensor}[opts.phase](*paths)
        result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(result, default=str))
        return

    files = 60 if opts.quick else opts.files
    load_at_start = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="mp-bench-ingest-"))
    try:
        root, lance, home = work / "agents", work / "lancedb", work / "home"
        info = generate(root, files, opts.tenants)
        print(f"workspace: {info['files']} files, {info['bytes'] / 1e6:.2f} MB in {work}")
        bare = run_phase("bare", str(root))
        print(f"bare embedder: {bare['texts']} texts, {bare['tokens']} tokens in {bare['seconds']:.1f} s "
              f"({bare['tokens'] / bare['seconds']:.0f} tokens/s), peak RSS {bare['peak_rss_mb']:.0f} MB")
        full = run_phase("pipeline", str(root), str(lance), str(home))
        print(f"full ingest (Dagster run, {full['tenants']} tenants): {full['seconds']:.1f} s, peak RSS {full['peak_rss_mb']:.0f} MB")
        if not opts.quick:
            after = run_phase("bare", str(root))
            print(f"bare embedder again: {after['seconds']:.1f} s ({after['tokens'] / after['seconds']:.0f} tokens/s)")
            assert (after["texts"], after["tokens"]) == (bare["texts"], bare["tokens"]), "the two bare passes embedded other texts"
            passes = [bare["seconds"], after["seconds"]]
            bare = {**bare, "seconds": sum(passes) / 2, "passes_seconds": passes}
        rerun = run_phase("pipeline", str(root), str(lance), str(home))
        print(f"no-change rerun: {rerun['seconds']:.2f} s, embeddings computed {rerun['metadata'].get('memory_embeddings.embeddings_computed')}")
        throughput_ratio = bare["seconds"] / full["seconds"]
        rerun_ratio = rerun["seconds"] / full["seconds"]
        more: dict = {}
        # The quick mode leaves out the 1%-changed run and the sensor tick: two more processes (a
        # model load each, a third of its time), and no ratio guarded on them.
        if not opts.quick:
            changed = change_files(root, 0.01)
            partial = run_phase("pipeline", str(root), str(lance), str(home))
            print(f"1% changed ({changed['files_changed']} files): {partial['seconds']:.2f} s, embeddings computed "
                  f"{partial['metadata'].get('memory_embeddings.embeddings_computed')}")
            sensor = run_phase("sensor", str(root), str(home))
            print(f"sensor tick over {files} files: {sensor['seconds']:.2f} s")
            more = {"changed": {**changed, **partial}, "sensor": sensor}
            postgres = rerun_on_postgres(root, lance, work / "home-postgres")
            if postgres:
                print(f"no-change rerun, instance on PostgreSQL: {postgres['seconds']:.2f} s")
                more["rerun_postgres"] = postgres
        # The two phases run one after the other; when the machine's load moves between them the
        # model itself runs at another speed. Everything but the model's own time is the
        # pipeline's overhead, which gives the ratio at equal model speed.
        overhead = full["seconds"] - full["metadata"].get("memory_embeddings.embed_seconds", 0.0)
        equal_speed_ratio = bare["seconds"] / (bare["seconds"] + overhead)
        print(f"RATIO full-ingest throughput / bare embedder: {throughput_ratio:.2f} (target >= 0.90)")
        print(f"RATIO no-change rerun / full ingest time: {rerun_ratio:.3f} (target <= 0.02)")
        if more:
            print(f"RATIO 1%-changed rerun / full ingest time: {more['changed']['seconds'] / full['seconds']:.3f}")
        if "rerun_postgres" in more:
            print(f"RATIO no-change rerun on PostgreSQL / full ingest time: {more['rerun_postgres']['seconds'] / full['seconds']:.3f}")
        print(f"RATIO at equal model speed (bare / (bare + pipeline time outside the model)): {equal_speed_ratio:.2f}")
        report = {
            "quick": opts.quick,
            "load_average_at_start": load_at_start,
            "workspace": info,
            "bare": bare,
            "full": full,
            "rerun": rerun,
            **more,
            "ratios": {
                "ingest_vs_bare_throughput": throughput_ratio,
                "rerun_vs_full_time": rerun_ratio,
                "ingest_vs_bare_at_equal_model_speed": equal_speed_ratio,
            },
        }
        if more:
            report["ratios"]["changed_1pct_vs_full_time"] = more["changed"]["seconds"] / full["seconds"]
        if "rerun_postgres" in more:
            report["ratios"]["rerun_postgres_vs_full_time"] = more["rerun_postgres"]["seconds"] / full["seconds"]
        write_report(opts.out, report)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
