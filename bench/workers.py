"""Throughput of dagster-celery workers: the same runs with 1 and with 2 worker processes.

The deployment of the multi-worker test (``memory_pipeline_tests/helpers/workers.py``: a new
PostgreSQL database, moto's S3, RabbitMQ and Redis on this machine) indexes and consolidates 20
small tenants (the test takes 6 of them), the runs of each stage at once (2 L0 runs, then 2
consolidation runs, over ranges of tenants), with ``--workers`` worker processes; the same plan
in one process with the in-process executor is the baseline. Each figure is the wall time from the coordinator's start
to its last run's end (workers already up and idle), with the 1-minute load average around it:
on a 2-core machine shared with other work, more worker processes than free cores only
interleave the steps.

    python bench/workers.py [--workers 1,2]

The hashing embedder and spaCy's small model: the figures are Dagster, Celery and the steps'
fixed costs (a worker process imports the code location once and loads spaCy on its first
consolidation step), not embedding throughput (``bench/ingest.py``).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench import command_line, write_report  # noqa: E402
from memory_pipeline_tests.helpers.workers import (  # noqa: E402
    TENANTS,
    build_workspace,
    deployment,
    run_plan,
    single_process,
    start_coordinator,
    start_workers,
)
from memory_pipeline_tests.production.service import stop_process  # noqa: E402


def wait_for_workers(env: dict, count: int, timeout: float = 300) -> None:
    from celery import Celery

    app = Celery(broker=env["MEMORY_PIPELINE_CELERY_BROKER"])
    deadline = time.monotonic() + timeout
    try:
        while len(app.control.ping(timeout=1.0) or []) < count:
            if time.monotonic() > deadline:
                raise SystemExit(f"{count} workers did not answer within {timeout} s")
    finally:
        app.close()


def with_workers(count: int) -> dict:
    base = Path(tempfile.mkdtemp(prefix=f"workers-{count}-"))
    with deployment(base) as env:
        root = Path(env["MEMORY_PIPELINE_ROOT"])
        build_workspace(root)
        plan = run_plan(root)
        workers = start_workers(env, base, count)
        try:
            wait_for_workers(env, count)
            load = os.getloadavg()[0]
            t0 = time.perf_counter()
            coordinator = start_coordinator(env, base, plan)
            out, _ = coordinator.communicate(timeout=1800)
            seconds = time.perf_counter() - t0
        finally:
            for worker in workers:
                stop_process(worker)
    outcomes = [json.loads(line) for line in out.decode().splitlines() if line.startswith("{")]
    assert len(outcomes) == 4 and all(o["success"] for o in outcomes), (base / "logs" / "runs.log").read_text()[-3000:]
    shutil.rmtree(base, ignore_errors=True)
    return {"workers": count, "wall_s": round(seconds, 1), "runs": len(outcomes), "load_1min": [load, os.getloadavg()[0]]}


def main() -> None:
    ap = command_line(__doc__, "workers")
    ap.add_argument("--workers", default="1,2")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="workers-single-"))
    (base / "agents").mkdir()
    build_workspace(base / "agents")
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    single_process(base / "agents", str(base / "lancedb"), run_plan(base / "agents"))
    single = {"wall_s": round(time.perf_counter() - t0, 1), "load_1min": [load, os.getloadavg()[0]]}
    print(f"single process (in-process executor, this process): {single}", flush=True)
    report = {"tenants": len(TENANTS), "cpus": os.cpu_count(), "single_process": single, "celery": []}
    for count in [int(n) for n in args.workers.split(",")]:
        entry = with_workers(count)
        report["celery"].append(entry)
        print(f"{count} worker(s): {entry}", flush=True)
    write_report(args.out, report)
    shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
