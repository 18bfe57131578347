"""Proves: several worker processes of an existing engine (two dagster-celery workers over
RabbitMQ, results in Redis) sharing one PostgreSQL instance and LanceDB on an S3 API (moto) index
and consolidate 6 tenants, in concurrent runs, into exactly the rows the single-process run
writes (same embedder, the hashing one, on both sides); a worker process killed in the middle of a
step has that step run again to success (Celery hands the unacknowledged step back to the broker)
and every run still succeeds with the same rows; no table holds a duplicate id. This is docs/deploy.md's tested multi-worker path.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from memory_pipeline_tests.helpers.object_store import s3_env
from memory_pipeline_tests.helpers.workers import (
    active_step,
    build_workspace,
    deployment,
    rows,
    run_plan,
    single_process,
    start_coordinator,
    start_workers,
    task_state,
)
from memory_pipeline_tests.production.service import stop_process

pytestmark = [pytest.mark.slow, pytest.mark.postgres]
WORKER_LOGS = ("worker0.log", "worker1.log")  # start_workers' two, in logs/
TENANT_COUNT = 6  # three per run: the runs' steps are what is tested, not their size


def test_two_workers_write_the_rows_of_one_process_even_when_a_worker_dies(tmp_path, monkeypatch):
    with deployment(tmp_path) as env:
        workers = start_workers(env, tmp_path)  # they start while the single-process run works
        try:
            root = Path(env["MEMORY_PIPELINE_ROOT"])
            build_workspace(root, TENANT_COUNT)
            plan = run_plan(root, TENANT_COUNT)
            single_process(root, str(tmp_path / "reference"), plan)
            expected = rows(str(tmp_path / "reference"))
            assert len(expected["chunks"]) >= 2 * TENANT_COUNT and len(expected["episodes"]) == TENANT_COUNT

            coordinator = start_coordinator(env, tmp_path, plan)
            killed, deadline = None, time.monotonic() + 300
            while killed is None and coordinator.poll() is None and time.monotonic() < deadline:
                if all(w.popen.poll() is not None for w in workers):  # no worker will ever take a step
                    coordinator.kill()
                    pytest.fail(f"every worker process exited before taking a step:\n{logs(tmp_path)}")
                killed = active_step(env)  # the first step a worker runs: its process dies in it
                if killed is not None:
                    os.kill(killed[0], signal.SIGKILL)
            out, _ = coordinator.communicate(timeout=900)
        finally:
            for worker in workers:
                stop_process(worker)
        outcomes = [json.loads(line) for line in out.decode().splitlines() if line.startswith("{")]
        assert killed is not None, logs(tmp_path)
        assert len(outcomes) == 4 and all(o["success"] for o in outcomes), (outcomes, logs(tmp_path))
        lost = [f for f in WORKER_LOGS if "WorkerLostError" in (tmp_path / "logs" / f).read_text(errors="replace")]
        assert len(lost) == 1, logs(tmp_path)  # Celery saw the process die in the step
        assert task_state(env, killed[1]) == "SUCCESS"  # the killed step, run again to its end

        for key, value in s3_env(env["AWS_ENDPOINT"]).items():
            monkeypatch.setenv(key, value)
        got = rows(env["MEMORY_PIPELINE_LANCEDB_URI"])
    assert got == expected
    for name, table in got.items():
        ids = [r["id"] for r in table if "id" in r]
        assert len(ids) == len(set(ids)), f"duplicate ids in {name}"


def logs(base: Path) -> str:
    return "\n".join((base / "logs" / f).read_text(errors="replace")[-3000:] for f in ("runs.log", *WORKER_LOGS))
