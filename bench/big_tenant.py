"""One big tenant: consolidating one user with thousands of turns, by stage, time and peak RSS.

A user of 10,500 turns once spent over 20 minutes in ``semantic_graph`` at 2.1 GB before it was
stopped; the target is 10k turns in at most 3 minutes and 1 GB, and a rerun that only reads what
changed. This benchmark builds such a tenant under a temporary folder from the LoCoMo dev turns
(read in place, never copied into the repository): ``--sessions`` sessions of 35 turns, one a
day, the turns taken in order and cycled (so later sessions repeat earlier words, as a long-lived
user does), roles ``user`` and ``assistant``. It then runs the plain functions consolidation runs
(summaries, graph, supersession over the tenant's statements) and prints each stage's seconds and
the process's peak RSS after it; ``--rerun`` runs them again on the same store (nothing changed).

``--cli`` measures what a user pays instead: the commands themselves, each a child process on the
generated workspace (its own LanceDB folder and Dagster home, the MiniLM embedder unless
``--embedder`` says otherwise): ``memory-pipeline ingest`` (``--no-ingest`` leaves it out), then
``memory-pipeline consolidate -a big -u u`` twice, the second with nothing new. Each prints its
wall and CPU seconds, the child's peak RSS and the load average before and after it.

    python bench/big_tenant.py [--sessions 300] [--embedder hash] [--rerun] [--profile OUT.prof]
    python bench/big_tenant.py --cli [--sessions 300] [--embedder minilm] [--no-ingest]

What it found (bench/notes.md, "One big tenant"): supersession read every pair of claims the
masks let through (now only claims sharing a key noun or value, and changing a value, meet); the
graph parsed a big tenant's turns twice (all at once outgrew the parse memo); a rerun redid every
step (now ``consolidation_inputs`` keeps what each step built each unit from).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench import work_offline  # noqa: E402

work_offline()

DEFAULT_EVAL = next(
    (p for p in (HERE.parent.parent / "shared/eval/locomo-dev", HERE.parent.parent.parent / "shared/eval/locomo-dev") if p.is_dir()),
    HERE.parent.parent / "shared/eval/locomo-dev",
)
TURNS_PER_SESSION = 35


def build_tenant(eval_dir: Path, root: Path, sessions: int) -> int:
    """Write ``big/sessions/u/s<n>.jsonl`` under ``root``; returns the number of turns."""
    source = []
    for path in sorted((eval_dir / "sessions").glob("*/*.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            if "content" in record:
                source.append(record)
    first_role = source[0]["role"]
    folder = root / "big" / "sessions" / "u"
    folder.mkdir(parents=True, exist_ok=True)
    start = datetime(2024, 1, 1, 9, tzinfo=UTC)
    n = 0
    for s in range(sessions):
        day = start + timedelta(days=s)
        lines = []
        for t in range(TURNS_PER_SESSION):
            record = source[n % len(source)]
            n += 1
            role = "user" if record["role"] == first_role else "assistant"
            ts = (day + timedelta(seconds=30 * t)).isoformat()
            lines.append(json.dumps({"role": role, "content": record["content"], "ts": ts, "turn_id": f"S{s}:{t}"}))
        lines.append(json.dumps({"type": "session.completed", "ts": (day + timedelta(hours=1)).isoformat()}))
        (folder / f"s{s:04d}.jsonl").write_text("\n".join(lines) + "\n")
    return n


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_s() -> float:
    """This process's CPU seconds: on a shared machine, wall seconds count the other work too."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def consolidate(root: Path, lance: Path, embedder) -> dict:
    from memory_pipeline.consolidation.pipeline import build_graph, consolidate_episodes
    from memory_pipeline.consolidation.store import ConsolidationStore
    from memory_pipeline.consolidation.supersession import supersede_tenant
    from memory_pipeline.episodes.sessions import SessionsRead
    from memory_pipeline.tenancy import Tenant

    tenant, now = Tenant("big", "u"), datetime.now(UTC)
    store = ConsolidationStore(lance, embedder.dim)
    stages = {}
    read = SessionsRead()  # as in one run: the graph reads the sessions the episodes read

    def timed(name: str, work, figures) -> None:
        wall, cpu = time.perf_counter(), cpu_s()
        done = work()
        stages[name] = {"seconds": round(time.perf_counter() - wall, 1), "cpu_s": round(cpu_s() - cpu, 1),
                        **figures(done), "peak_rss_mb": round(peak_rss_mb())}

    timed("episodes", lambda: consolidate_episodes(root, store, tenant, None, embedder, now, timedelta(minutes=30), timedelta(days=90), read=read),
          lambda r: {"written": len(r.drafts), "unchanged": r.unchanged})
    timed("graph", lambda: build_graph(root, store, tenant, None, embedder, pending_only=True, read=read),
          lambda r: {"relations": len(r.relations), "episodes_read": r.episodes})
    timed("supersession", lambda: supersede_tenant(root, lance, tenant, embedder, now),
          lambda r: {"statements": r.statements, "records": len(r.records), "unchanged": r.unchanged})
    return stages


def environment(workdir: Path, embedder: str) -> dict[str, str]:
    """The environment of the commands: the generated workspace, its own stores, offline models."""
    home = workdir / "dagster_home"
    home.mkdir(exist_ok=True)
    return {
        **os.environ, "PYTHONPATH": str(HERE.parent), "MEMORY_PIPELINE_ROOT": str(workdir / "agents"),
        "MEMORY_PIPELINE_LANCEDB_URI": str(workdir / "lancedb"), "MEMORY_PIPELINE_EMBEDDER": embedder,
        "DAGSTER_HOME": str(home), "LANCE_LOG": "error",
    }


def command(args: list[str], env: dict[str, str]) -> dict:
    """One command from launch to exit: wall and CPU seconds, the child's peak RSS, the load."""
    cmd = [sys.executable, "-m", "memory_pipeline.cli", *args]
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=err, cwd=HERE.parent)
        _, status, usage = os.wait4(proc.pid, 0)  # the usage of this child alone
        wall = time.perf_counter() - started
        if os.waitstatus_to_exitcode(status) != 0:
            err.seek(0)
            raise SystemExit(f"memory-pipeline {' '.join(args)} failed: {err.read().decode()[-2000:]}")
    return {
        "command": f"memory-pipeline {' '.join(args)}", "wall_s": round(wall, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1), "peak_rss_mb": round(usage.ru_maxrss / 1024),
        "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2),
    }


def run_commands(args: argparse.Namespace) -> None:
    embedder = args.embedder or "minilm"
    with tempfile.TemporaryDirectory(prefix="big-tenant-") as tmp:
        workdir = Path(tmp)
        turns = build_tenant(args.eval, workdir / "agents", args.sessions)
        print(f"tenant big~u: {args.sessions} sessions, {turns} turns; embedder {embedder}", flush=True)
        env = environment(workdir, embedder)
        steps = [] if args.no_ingest else [["ingest", "-a", "big", "-u", "u"]]
        steps += [["consolidate", "-a", "big", "-u", "u"], ["consolidate", "-a", "big", "-u", "u"]]
        for n, step in enumerate(steps):
            figures = command(step, env)
            if n == len(steps) - 1:
                figures["command"] += "  (again, nothing new)"
            print(json.dumps(figures), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=300, help="Sessions of 35 turns (300: 10,500 turns).")
    parser.add_argument("--eval", type=Path, default=DEFAULT_EVAL, help="The LoCoMo dev folder the turns come from.")
    parser.add_argument("--embedder", help="hash or minilm (default: hash for the functions, whose question is not the "
                        "model's time; minilm for --cli, what users run).")
    parser.add_argument("--rerun", action="store_true", help="Consolidate a second time on the same store.")
    parser.add_argument("--profile", type=Path, help="Write a cProfile of the first pass here.")
    parser.add_argument("--cli", action="store_true", help="Run the commands as child processes instead.")
    parser.add_argument("--no-ingest", action="store_true", help="With --cli: consolidate only.")
    args = parser.parse_args()
    if args.cli:
        run_commands(args)
        return

    from memory_pipeline.embedding import make_embedder
    from memory_pipeline.text.statements import load_nlp

    embedder = make_embedder(args.embedder or "hash")
    load_nlp()
    with tempfile.TemporaryDirectory(prefix="big-tenant-") as tmp:
        root, lance = Path(tmp) / "agents", Path(tmp) / "lancedb"
        turns = build_tenant(args.eval, root, args.sessions)
        print(f"tenant big~u: {args.sessions} sessions, {turns} turns; models loaded, peak RSS {peak_rss_mb():.0f} MB")
        profile = cProfile.Profile() if args.profile else None
        started, load = time.perf_counter(), os.getloadavg()[0]
        if profile:
            profile.enable()
        first = consolidate(root, lance, embedder)
        if profile:
            profile.disable()
            profile.dump_stats(args.profile)
        print(f"first pass: {time.perf_counter() - started:.1f} s (load {load:.1f} -> {os.getloadavg()[0]:.1f})  {json.dumps(first)}")
        if args.rerun:
            started, load = time.perf_counter(), os.getloadavg()[0]
            second = consolidate(root, lance, embedder)
            print(f"rerun, nothing changed: {time.perf_counter() - started:.1f} s (load {load:.1f} -> {os.getloadavg()[0]:.1f})  {json.dumps(second)}")


if __name__ == "__main__":
    main()
