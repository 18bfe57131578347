"""One big tenant: consolidating one user with thousands of turns, by stage, time and peak RSS.

A user of 10,500 turns once spent over 20 minutes in ``semantic_graph`` at 2.1 GB before it was
stopped; the target is 10k turns in at most 3 minutes and 1 GB, and a rerun that only reads what
changed. This benchmark builds such a tenant under a temporary folder from the LoCoMo dev turns
(read in place, never copied into the repository): ``--sessions`` sessions of 35 turns, one a
day, the turns taken in order and cycled (so later sessions repeat earlier words, as a long-lived
user does), roles ``user`` and ``assistant``. It then runs the plain functions consolidation runs
(summaries, graph, supersession over the tenant's statements) and prints each stage's seconds and
the process's peak RSS after it; ``--rerun`` runs them again on the same store (nothing changed).

    python bench/big_tenant.py [--sessions 300] [--embedder hash] [--rerun] [--profile OUT.prof]

What it found (docs in bench/notes.md): supersession's candidate pairs were masked as N x N
arrays at once (now a block of old claims at a time, same pairs), and the rules then read every
pair the masks let through, which grows with the square of the tenant's claims.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import resource
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
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


def consolidate(root: Path, lance: Path, embedder) -> dict:
    from memory_pipeline.consolidation.pipeline import build_graph, consolidate_episodes
    from memory_pipeline.consolidation.store import ConsolidationStore
    from memory_pipeline.consolidation.timeline import supersede_tenant
    from memory_pipeline.tenancy import Tenant

    tenant, now = Tenant("big", "u"), datetime.now(UTC)
    store = ConsolidationStore(lance, embedder.dim)
    stages = {}
    t0 = time.perf_counter()
    episodes = consolidate_episodes(root, store, tenant, None, embedder, now, timedelta(minutes=30), timedelta(days=90))
    stages["episodes"] = {"seconds": round(time.perf_counter() - t0, 1), "written": len(episodes.drafts), "peak_rss_mb": round(peak_rss_mb())}
    t0 = time.perf_counter()
    graph = build_graph(root, store, tenant, None, embedder)
    stages["graph"] = {"seconds": round(time.perf_counter() - t0, 1), "relations": len(graph.relations), "peak_rss_mb": round(peak_rss_mb())}
    t0 = time.perf_counter()
    timeline = supersede_tenant(root, lance, tenant, embedder, now)
    stages["supersession"] = {
        "seconds": round(time.perf_counter() - t0, 1), "statements": timeline.statements,
        "records": len(timeline.records), "peak_rss_mb": round(peak_rss_mb()),
    }
    return stages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=300, help="Sessions of 35 turns (300: 10,500 turns).")
    parser.add_argument("--eval", type=Path, default=DEFAULT_EVAL, help="The LoCoMo dev folder the turns come from.")
    parser.add_argument("--embedder", default="hash", help="hash (default: the model's time is not the question) or minilm.")
    parser.add_argument("--rerun", action="store_true", help="Consolidate a second time on the same store.")
    parser.add_argument("--profile", type=Path, help="Write a cProfile of the first pass here.")
    args = parser.parse_args()

    from memory_pipeline.embedding import make_embedder
    from memory_pipeline.knowledge.relations import load_nlp
    from memory_pipeline.text.memory_types import load_nlp as load_statement_nlp

    embedder = make_embedder(args.embedder)
    load_nlp()
    load_statement_nlp()
    with tempfile.TemporaryDirectory(prefix="big-tenant-") as tmp:
        root, lance = Path(tmp) / "agents", Path(tmp) / "lancedb"
        turns = build_tenant(args.eval, root, args.sessions)
        print(f"tenant big~u: {args.sessions} sessions, {turns} turns; models loaded, peak RSS {peak_rss_mb():.0f} MB")
        profile = cProfile.Profile() if args.profile else None
        started = time.perf_counter()
        if profile:
            profile.enable()
        first = consolidate(root, lance, embedder)
        if profile:
            profile.disable()
            profile.dump_stats(args.profile)
        print(f"first pass: {time.perf_counter() - started:.1f} s  {json.dumps(first)}")
        if args.rerun:
            started = time.perf_counter()
            second = consolidate(root, lance, embedder)
            print(f"rerun, nothing changed: {time.perf_counter() - started:.1f} s  {json.dumps(second)}")


if __name__ == "__main__":
    main()
