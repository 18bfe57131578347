"""One-shot queries: a new process answering one search or loading the working memory, and the
MCP server's first answer.

    python bench/oneshot.py [--chunks 10000] [--runs 7] [--out bench/results/oneshot.json]

A tenant of ``--chunks`` generated chunks (``bench/recall.py``'s generator, written into a fresh
LanceDB ``chunks`` table with its full-text and tenant indices) is searched by new processes,
each timed from launch to exit, with its peak RSS and CPU seconds (``wait4``):

- ``search``: ``memory-pipeline search "<query>" -a bench -u <user> --min-score 0 --json``, a new
  query each run;
- ``context``: ``memory-pipeline context -a bench -u <user> --json``, the working memory an agent
  loads every cycle, made from ``MEMORIES`` typed memories of every type (dated, some due within
  weeks), as the last one made is kept (``memories/context_file.py``); ``context_made``: the
  same with the kept file removed before each run, so it is made from the tables;
- ``memories_query``, ``memories_search`` and ``memories_stats``: ``memory-pipeline memories query``
  (the newest 20), ``memories search "<words of a stored memory>"`` and ``memories stats`` (the
  counts by type and source, the graph's and the audit's), answered from the tenant's reads kept at
  the tables' versions (``recall/index/kept_reads.py``);
- ``help``: ``memory-pipeline --help``, the CLI's own start-up, the baseline ``search`` and
  ``context`` are divided by;
- ``python``: ``python -c pass``, the interpreter alone;
- for reference, what every query process paid before: ``import lancedb``, and loading the model
  through sentence-transformers to encode one query (``--reference-runs`` of each).

The commands run interleaved (search, context, context_made, memories_query, memories_search,
memories_stats, help, python, search, ...) so the machine's drift falls on
all alike; medians are reported. One search first (not timed) finds the tables as an ingest left
them and writes the tenant's persisted indices and kept reads, as the first query after an ingest
does; its time is reported apart.

The MCP server: ``python -m memory_pipeline.mcp_server`` launched by the official MCP client over
stdio, as an agent launches it, timed from the launch to the end of ``initialize`` and to the
answer of its first ``memory_search``; median of ``--runs`` servers.

This process stays small (the table is written and the query encoder prepared by child
processes): a child's peak RSS as ``wait4`` reports it starts from its parent's at the fork.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench import OFFLINE, command_line, host_steal_s, steal_since, write_report  # noqa: E402

AGENT = "bench"
MEMORIES = 200
TARGET_WALL_S, TARGET_RSS_MB, TARGET_MCP_S = 1.0, 400, 2.0


def environment(workdir: Path) -> dict[str, str]:
    """The environment a query process runs in."""
    return {
        **os.environ, "PYTHONPATH": str(HERE.parent), "MEMORY_PIPELINE_ROOT": str(workdir / "agents"),
        "MEMORY_PIPELINE_LANCEDB_URI": str(workdir / "lancedb"), "MEMORY_PIPELINE_EMBEDDER": "minilm",
        **OFFLINE, "LANCE_LOG": "error",
    }


def build(workdir: Path, chunks: int) -> None:
    """The tenant's table, typed memories and workspace folder, and queries for it
    (``queries.json``): run as a child process (``--build``)."""
    from datetime import UTC, datetime, timedelta

    import numpy as np

    from bench.recall import DIM, Mixture, tenant_slices, texts, vocabulary
    from memory_pipeline.embedding import HashEmbedder
    from memory_pipeline.l0.store import ChunkIndex
    from memory_pipeline.memories.operations import TypedMemories
    from memory_pipeline.memories.store import MEMORY_TYPES
    from memory_pipeline.tenancy import Tenant

    uri, root, user = workdir / "lancedb", workdir / "agents", f"t{chunks}"
    (root / AGENT / "users" / user).mkdir(parents=True)
    store = ChunkIndex(str(uri), dim=DIM)
    table = store.chunks()
    vocab = vocabulary(random.Random(7))
    for part in tenant_slices(user, chunks, chunks, vocab, Mixture(chunks, chunks)):
        table.add(part)
    store.ensure_fts_index()
    queries = [" ".join(t.split()[:4]) for t in texts(np.random.default_rng(3), vocab, 100)]
    (workdir / "queries.json").write_text(json.dumps(queries))
    # Vectors do not matter to the working memory: a hash of the words, of the model's size.
    typed, rng, now = TypedMemories.open(str(uri), HashEmbedder(DIM)), random.Random(11), datetime.now(UTC)
    kinds = [MEMORY_TYPES[i % len(MEMORY_TYPES)] for i in range(MEMORIES)]
    rows = [typed.row(Tenant(AGENT, user), kind, " ".join(rng.choice(vocab) for _ in range(12)),
                      occurred_at=now - timedelta(days=i, hours=rng.randint(0, 23)),
                      happens_at=now + timedelta(days=rng.randint(1, 60)) if kind in ("todo", "goal", "event") else None)
            for i, kind in enumerate(kinds)]
    typed.embed_rows(rows)
    typed.store.upsert_memories(rows)


def run(cmd: list[str], env: dict) -> dict:
    """One process from launch to exit: wall and CPU seconds, peak RSS, and what it printed."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=err, cwd=HERE.parent)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {err.read().decode()[-2000:]}")
        return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "rss_mb": usage.ru_maxrss / 1024,
                "stdout": out.read().decode()}


def mcp_first_answer(env: dict, user: str, query: str) -> dict:
    """A server launched over stdio: seconds to the end of ``initialize`` and to its first answer."""
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def main():
        params = StdioServerParameters(command=sys.executable, env=env, cwd=str(HERE.parent),
                                       args=["-m", "memory_pipeline.mcp_server", "--agent", AGENT, "--user", user])
        started = time.perf_counter()
        with open(os.devnull, "w") as devnull:
            async with stdio_client(params, errlog=devnull) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    ready = time.perf_counter() - started
                    result = await session.call_tool("memory_search", {"query": query, "limit": 3, "min_score": 0})
                    answered = time.perf_counter() - started
                    if result.is_error or not json.loads(result.content[0].text):
                        raise SystemExit(f"memory_search answered {result.content[0].text[:300]!r}")
                    return {"initialized_s": ready, "first_answer_s": answered}

    return anyio.run(main)


def median(samples: list[dict], key: str) -> float:
    return round(statistics.median(s[key] for s in samples), 3)


def summary(samples: list[dict]) -> dict:
    return {key: median(samples, key) for key in samples[0] if key != "stdout"} | {"n": len(samples)}


def main() -> None:
    ap = command_line(__doc__, "oneshot")
    ap.add_argument("--chunks", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--reference-runs", type=int, default=3)
    ap.add_argument("--build", help=argparse.SUPPRESS)  # the child that writes the table
    args = ap.parse_args()
    if args.build:
        build(Path(args.build), args.chunks)
        return
    report: dict = {"load_average_at_start": os.getloadavg(), "chunks": args.chunks, "runs": args.runs}
    steal = host_steal_s()
    workdir = Path(tempfile.mkdtemp(prefix="oneshot-bench-"))
    try:
        env, user = environment(workdir), f"t{args.chunks}"
        subprocess.run([sys.executable, __file__, "--build", str(workdir), "--chunks", str(args.chunks)], env=env, check=True)
        # The query encoder exported and checked against the model, as the install does.
        report["query_encoder"] = run([sys.executable, "-m", "memory_pipeline.embedding"], env)["stdout"].strip()
        queries = json.loads((workdir / "queries.json").read_text())
        cli = [shutil.which("memory-pipeline") or sys.executable, *([] if shutil.which("memory-pipeline") else ["-m", "memory_pipeline.cli"])]

        def search(query: str) -> list[str]:
            # The generated words mean nothing to the model: no score floor, every search returns k results.
            return [*cli, "search", query, "-a", AGENT, "-u", user, "--min-score", "0", "--json"]

        first = run(search(queries[-1]), env)
        assert json.loads(first["stdout"]), "the first search found nothing"
        report["first_search_after_ingest"] = {k: round(v, 3) for k, v in first.items() if k != "stdout"}
        context = [*cli, "context", "-a", AGENT, "-u", user, "--json"]
        # ``context_file.path``, spelled out: importing it would bring Arrow into this process,
        # whose size every child's peak RSS starts from
        kept = workdir / "lancedb" / "_recall_index" / "context" / f"{AGENT}~{user}" / "working.json"
        run(context, env)  # the first one is made and kept; each ``context_made`` run below makes it again
        memories = [*cli, "memories", "query", "-a", AGENT, "-u", user, "--limit", "20", "--json"]
        run(memories, env)  # reads the typed memories through LanceDB, and keeps the read
        shown = json.loads(run(memories, env)["stdout"])
        assert len(shown) == 20, "fewer typed memories than asked"

        stats = [*cli, "memories", "stats", "-a", AGENT, "-u", user, "--json"]
        run(stats, env)  # reads the counted columns and the audit through LanceDB, and keeps the reads

        def recall_memories(i: int) -> list[str]:
            words = " ".join(shown[i % len(shown)]["content"].split()[:4])
            return [*cli, "memories", "search", words, "-a", AGENT, "-u", user, "--json"]

        timed: dict[str, list[dict]] = {name: [] for name in (
            "search", "context", "context_made", "memories_query", "memories_search", "memories_stats", "help", "python")}
        for i in range(args.runs):
            timed["search"].append(run(search(queries[i]), env))
            assert json.loads(timed["search"][-1]["stdout"]), f"no result for {queries[i]!r}"
            timed["context"].append(run(context, env))
            assert kept.is_file() and json.loads(timed["context"][-1]["stdout"])["items"], "no working memory"
            kept.unlink()
            timed["context_made"].append(run(context, env))
            assert timed["context_made"][-1]["stdout"] == timed["context"][-1]["stdout"], "kept != made"
            timed["memories_query"].append(run(memories, env))
            assert json.loads(timed["memories_query"][-1]["stdout"]) == shown, "the typed memories changed"
            timed["memories_search"].append(run(recall_memories(i), env))
            assert json.loads(timed["memories_search"][-1]["stdout"]), "no typed memory found"
            timed["memories_stats"].append(run(stats, env))
            assert json.loads(timed["memories_stats"][-1]["stdout"])["memories"] == MEMORIES, "not every memory counted"
            timed["help"].append(run([*cli, "--help"], env))
            timed["python"].append(run([sys.executable, "-c", "pass"], env))
        report["processes"] = {name: summary(samples) for name, samples in timed.items()}
        reference = {
            "import_lancedb": [sys.executable, "-c", "import lancedb"],
            # sentence-transformers itself: the embedder now encodes through the ONNX export
            "model_encode_one_query": [sys.executable, "-c", "from sentence_transformers import SentenceTransformer; "
                                       "from memory_pipeline.embedding import minilm_path; "
                                       "SentenceTransformer(str(minilm_path()), device='cpu').encode(['one query'])"],
        }
        report["reference"] = {name: summary([run(cmd, env) for _ in range(args.reference_runs)])
                               for name, cmd in reference.items()}
        mcp = [mcp_first_answer(env, user, queries[args.runs + i]) for i in range(args.runs)]
        report["mcp"] = summary(mcp)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    search_s, help_s = report["processes"]["search"], report["processes"]["help"]
    context_s, made_s = report["processes"]["context"], report["processes"]["context_made"]
    shown_s, found_s = report["processes"]["memories_query"], report["processes"]["memories_search"]
    counted_s = report["processes"]["memories_stats"]
    report["ratios"] = {
        "search_vs_help_wall": round(search_s["wall_s"] / help_s["wall_s"], 2),
        "search_vs_help_cpu": round(search_s["cpu_s"] / help_s["cpu_s"], 2),
        "context_vs_help_wall": round(context_s["wall_s"] / help_s["wall_s"], 2),
        "context_kept_vs_made_cpu": round(context_s["cpu_s"] / made_s["cpu_s"], 2),
        "memories_query_vs_help_wall": round(shown_s["wall_s"] / help_s["wall_s"], 2),
        "memories_search_vs_search_wall": round(found_s["wall_s"] / search_s["wall_s"], 2),
        "memories_stats_vs_help_wall": round(counted_s["wall_s"] / help_s["wall_s"], 2),
        "search_vs_python_wall": round(search_s["wall_s"] / report["processes"]["python"]["wall_s"], 2),
    }
    report["targets"] = {
        "search_wall_s": [search_s["wall_s"], TARGET_WALL_S, search_s["wall_s"] <= TARGET_WALL_S],
        "search_rss_mb": [search_s["rss_mb"], TARGET_RSS_MB, search_s["rss_mb"] <= TARGET_RSS_MB],
        "context_wall_s": [context_s["wall_s"], TARGET_WALL_S, context_s["wall_s"] <= TARGET_WALL_S],
        "memories_query_wall_s": [shown_s["wall_s"], TARGET_WALL_S, shown_s["wall_s"] <= TARGET_WALL_S],
        "memories_search_wall_s": [found_s["wall_s"], TARGET_WALL_S, found_s["wall_s"] <= TARGET_WALL_S],
        "memories_stats_wall_s": [counted_s["wall_s"], TARGET_WALL_S, counted_s["wall_s"] <= TARGET_WALL_S],
        "mcp_first_answer_s": [report["mcp"]["first_answer_s"], TARGET_MCP_S, report["mcp"]["first_answer_s"] <= TARGET_MCP_S],
    }
    report["bench_process_peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    report["load_average_at_end"] = os.getloadavg()
    report["host_steal_s"] = steal_since(steal)
    for name, figures in {**report["processes"], **report["reference"], "mcp": report["mcp"]}.items():
        print(f"  {name:24s} " + "  ".join(f"{k} {v}" for k, v in figures.items()), flush=True)
    print("  ratios: " + ", ".join(f"{k} {v}" for k, v in report["ratios"].items()))
    print(f"  load {report['load_average_at_start'][0]:.1f} -> {report['load_average_at_end'][0]:.1f}, "
          f"host took {report['host_steal_s']} CPU s")
    write_report(args.out, report)


if __name__ == "__main__":
    main()
