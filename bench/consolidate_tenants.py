"""Many small tenants consolidated by the user's command: runs launched and sessions per minute.

Builds a workspace of ``--tenants`` tenants (30) with ``--sessions`` short completed sessions each
(3, on different days of the last weeks) in a temporary folder, then runs
``memory-pipeline consolidate --all --json`` as a subprocess, as a user would, with its own
LanceDB folder and Dagster home (on disk unless ``--home-on-tmpfs``), and prints the number of
runs the command launched, sessions per minute over the command's runs (its ``seconds``: the
runs, model loads included) and over the whole process (imports too), the CPU seconds the
process used, with the 1-minute load average before and after. A second ``consolidate --all`` on the same folders shows what a rerun
with nothing new costs.

``--code PATH`` runs the command from another checkout of the project (its folder is put first
on ``PYTHONPATH``), to compare two versions on the same workspace in one invocation.

    python bench/consolidate_tenants.py [--tenants 30] [--sessions 3] [--embedder minilm] [--code ../main]
"""

from __future__ import annotations

import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench import OFFLINE, command_line, write_report  # noqa: E402

NAMES = ["Ana", "Ben", "Chloe", "Dev", "Elif", "Femi", "Gus", "Hana", "Ivo", "Jun"]
CITIES = ["Lisbon", "Porto", "Berlin", "Madrid", "Oslo", "Dublin", "Vienna", "Prague"]
ORGS = ["Acme Corp", "Globex", "Initech", "Umbrella Labs", "Stark Industries", "Wayne Foods"]
PROJECTS = ["Falcon", "Osprey", "Kestrel", "Heron", "Condor", "Raven"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]


def session_lines(rng: random.Random, user: str, start: datetime) -> list[dict]:
    """A short support conversation: who the user is, a plan, a preference, a change."""
    org, city, project, day = rng.choice(ORGS), rng.choice(CITIES), rng.choice(PROJECTS), rng.choice(DAYS)
    colleague = rng.choice(NAMES)
    turns = [
        ("user", f"Hi, this is {user}. I work at {org} and I live in {city}."),
        ("assistant", f"Hello {user}, good to hear from you. How can I help today?"),
        ("user", f"We decided to ship the {project} release on {day} after the QA sign-off."),
        ("assistant", f"Noted: {project} ships on {day} once QA signs off."),
        ("user", f"{colleague} from {org} will review the {project} rollout plan with me."),
        ("assistant", f"I will remind you to book time with {colleague} before {day}."),
        ("user", f"Please send status updates by email, I prefer short summaries."),
        ("assistant", "Understood, short email summaries from now on."),
    ]
    lines = [
        {"role": role, "content": text, "ts": (start + timedelta(minutes=n)).strftime("%Y-%m-%dT%H:%M:%SZ"), "turn_id": f"t{n + 1}"}
        for n, (role, text) in enumerate(turns)
    ]
    end = start + timedelta(minutes=len(turns) + 2)
    return [*lines, {"type": "session.completed", "ts": end.strftime("%Y-%m-%dT%H:%M:%SZ")}]


def build_workspace(root: Path, tenants: int, sessions: int, seed: int = 7) -> int:
    """``tenants`` tenants over three agents, ``sessions`` completed sessions each, on days spread
    over the last weeks; returns the number of sessions written."""
    rng = random.Random(seed)
    today = datetime.now(UTC).replace(hour=9, minute=0, second=0, microsecond=0)
    count = 0
    for t in range(tenants):
        agent, user = f"bot{t % 3}", f"user{t:02d}"
        name = NAMES[t % len(NAMES)]
        for s in range(sessions):
            start = today - timedelta(days=1 + s * 4 + t % 4, hours=t % 5)
            path = root / agent / "sessions" / user / f"s{s}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("\n".join(json.dumps(r) for r in session_lines(rng, name, start)) + "\n", encoding="utf-8")
            count += 1
    return count


def consolidate_all(code: Path, env: dict[str, str], extra: tuple[str, ...] = ()) -> tuple[dict, float, float]:
    """(the command's JSON summary, wall seconds of the process, CPU seconds it used: on a loaded
    machine the wall time mostly measures the other processes, the CPU time much less)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "memory_pipeline.cli", "consolidate", "--all", "--json", *extra],
        cwd=code, env=env, capture_output=True, text=True, check=False,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        sys.exit(f"consolidate failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout), wall, cpu


def main() -> None:
    parser = command_line(__doc__, "consolidate_tenants")
    parser.add_argument("--tenants", type=int, default=30)
    parser.add_argument("--sessions", type=int, default=3, help="completed sessions per tenant")
    parser.add_argument("--embedder", default="minilm", choices=["minilm", "hash"])
    parser.add_argument("--code", default=str(HERE.parent), help="the checkout whose command runs")
    parser.add_argument("--home-on-tmpfs", action="store_true", help="Dagster home and LanceDB under /dev/shm")
    parser.add_argument("--no-rerun", action="store_true", help="skip the second consolidate --all")
    opts = parser.parse_args()
    code = Path(opts.code).resolve()
    base = Path("/dev/shm") if opts.home_on_tmpfs and Path("/dev/shm").is_dir() else None
    work = Path(tempfile.mkdtemp(prefix="mp-bench-tenants-", dir=base))
    try:
        root = work / "agents"
        written = build_workspace(root, opts.tenants, opts.sessions)
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(code), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
            "MEMORY_PIPELINE_ROOT": str(root),
            "MEMORY_PIPELINE_LANCEDB_URI": str(work / "lancedb"),
            "MEMORY_PIPELINE_EMBEDDER": opts.embedder,
            "DAGSTER_HOME": str(work / "dagster_home"),
            **OFFLINE,
        }
        print(f"{opts.tenants} tenants x {opts.sessions} sessions = {written} sessions in {work}; code {code}")
        load_before = os.getloadavg()
        summary, wall, cpu = consolidate_all(code, env)
        load_after = os.getloadavg()
        episodes = summary["assets"].get("episodic_summaries", {})
        consolidated = episodes.get("sessions_complete", 0)
        rerun, rerun_wall, rerun_cpu = ({"runs": [], "seconds": 0.0, "assets": {}}, 0.0, 0.0) if opts.no_rerun else consolidate_all(code, env)
        report = {
            "tenants": opts.tenants, "sessions_written": written, "embedder": opts.embedder,
            "code": "." if code == HERE.parent else str(code), "math_threads": os.environ.get("OMP_NUM_THREADS", "default"),
            "home_on_tmpfs": bool(base),
            "runs": len(summary["runs"]), "sessions_consolidated": consolidated,
            "command_seconds": summary["seconds"], "process_wall_seconds": round(wall, 2),
            "sessions_per_min_command": round(consolidated / summary["seconds"] * 60, 1),
            "sessions_per_min_process": round(consolidated / wall * 60, 1),
            "process_cpu_seconds": round(cpu, 2),
            "sessions_per_cpu_min_process": round(consolidated / cpu * 60, 1),
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in load_after],
            "success": summary["success"],
            "rerun": {
                "runs": len(rerun["runs"]), "command_seconds": rerun["seconds"], "process_wall_seconds": round(rerun_wall, 2),
                "process_cpu_seconds": round(rerun_cpu, 2),
                "sessions_consolidated": rerun["assets"].get("episodic_summaries", {}).get("sessions_complete", 0),
            },
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"consolidate --all: {report['runs']} run(s), {consolidated} sessions consolidated; "
          f"{report['sessions_per_min_command']:.0f} sessions/min over the command's runs ({summary['seconds']:.1f} s), "
          f"{report['sessions_per_min_process']:.0f} over the whole process ({wall:.1f} s)")
    print(f"  the process used {cpu:.1f} CPU s: {report['sessions_per_cpu_min_process']:.0f} sessions per CPU minute")
    print(f"  1-min load average {load_before[0]:.2f} before, {load_after[0]:.2f} after")
    print(f"rerun with nothing new: {report['rerun']['runs']} run(s), {report['rerun']['sessions_consolidated']} sessions, "
          f"{rerun['seconds']:.1f} s in the command, {rerun_wall:.1f} s in all, {rerun_cpu:.1f} CPU s")
    write_report(opts.out, report)


if __name__ == "__main__":
    main()
