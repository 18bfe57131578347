"""A multi-worker deployment on one machine, for its end-to-end test and its benchmark: a new
PostgreSQL database, moto's S3, dagster-celery workers, 20 small tenants, and the rows the runs write.

The deployment's processes share one environment (``deployment``); runs are started by the
coordinator of ``celery_runs.py`` from a plan (``run_plan``) that the single-process run
(``single_process``) executes too, so the two write comparable rows.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
import pytest

from memory_pipeline.consolidation.assets import consolidation_assets, consolidation_job
from memory_pipeline.consolidation.launch import completed_tenants
from memory_pipeline.l0.assets import l0_assets, l0_index_job
from memory_pipeline.orchestration.partitions import SESSION_TENANTS_PARTITION, TENANTS_PARTITION
from memory_pipeline.orchestration.resources import CELERY_SETTINGS
from memory_pipeline.orchestration.runs import range_tags, register_tenants
from memory_pipeline_tests.helpers import REPO, make_resources, write
from memory_pipeline_tests.helpers.consolidation import jsonl, say
from memory_pipeline_tests.helpers.object_store import BUCKET, moto_s3, s3_env
from memory_pipeline_tests.production.service import (
    PG_HOST,
    PG_PORT,
    bin_path,
    create_database,
    drop_database,
    pg_admin_connection,
    start_process,
)

TENANTS = [f"u{i:02d}" for i in range(20)]  # the benchmark's; the test takes the first few
NAMES = ("Alice", "Bruno", "Chen", "Dana", "Emeka")
CITIES = ("Lisbon", "Oslo", "Nairobi", "Quito", "Hanoi")
DAY = "2026-11-10"
BROKER = "amqp://guest:guest@127.0.0.1:5672//"
POOLS = ("embedding", "lancedb_write", "consolidation_write")
# Tables the runs write, and the columns that hold when a row was written rather than what it says.
TABLES = ("chunks", "files", "episodes", "entities", "relations")
WRITE_TIMES = {"updated_at", "created_at", "indexed_at", "expires_at", "seen_at"}


def build_workspace(root: Path, tenants: int = len(TENANTS)) -> None:
    """Each of the first ``tenants`` tenants: one note and one completed session of three turns,
    all on ``DAY``."""
    for i, user in enumerate(TENANTS[:tenants]):
        name, city = NAMES[i % len(NAMES)], CITIES[(i // len(NAMES)) % len(CITIES)]
        write(root, f"bot/users/{user}/MEMORY.md", f"# {name}\n\n{name} lives in {city} and prefers tea to coffee.\n")
        write(root, f"bot/sessions/{user}/s{i}.jsonl", jsonl(
            say("user", f"I moved to {city} last spring with my sister Maya.", f"{DAY}T09:00:00Z", "t1"),
            say("assistant", f"Noted: you live in {city} now.", f"{DAY}T09:00:05Z", "t2"),
            say("user", f"My manager {name} approved the Falcon project budget today.", f"{DAY}T09:01:00Z", "t3"),
            completed=f"{DAY}T09:02:00Z"))


def run_plan(root: Path, tenants: int = len(TENANTS), runs_per_stage: int = 2) -> dict:
    """The L0 index of the first ``tenants`` tenants (``build_workspace``'s), then their
    consolidation, each stage ``runs_per_stage`` runs over ranges of partitions (as a single-run
    backfill makes them), the runs of a stage at once."""
    keys = [f"bot~{u}" for u in TENANTS[:tenants]]
    assert completed_tenants(root, idle_minutes=30, days=[DAY]) == sorted(keys)
    size = -(-len(keys) // runs_per_stage)
    parts = [keys[i : i + size] for i in range(0, len(keys), size)]
    return {
        "register": {TENANTS_PARTITION: keys, SESSION_TENANTS_PARTITION: keys},
        "pools": dict.fromkeys(POOLS, 1),
        "stages": [
            [{"job": "l0_index_job", "tags": range_tags(p[0], p[-1])} for p in parts],
            [{"job": "consolidation_job", "tags": range_tags(p[0], p[-1])} for p in parts],
        ],
    }


def single_process(root: Path, uri: str, plan: dict) -> None:
    """The plan's runs one after another in this process (the in-process executor)."""
    defs = dg.Definitions(assets=[*l0_assets, *consolidation_assets], jobs=[l0_index_job, consolidation_job],
                          resources=make_resources(root, uri))
    with dg.instance_for_test() as instance:
        for partitions, keys in plan["register"].items():
            register_tenants(instance, keys, partitions)
        for stage in plan["stages"]:
            for run in stage:
                assert defs.resolve_job_def(run["job"]).execute_in_process(instance=instance, tags=run["tags"]).success


def rows(uri: str) -> dict[str, list[dict]]:
    """Every row of ``TABLES`` without its write times, in a stable order."""
    import lancedb

    db = lancedb.connect(uri)
    present = set(db.list_tables().tables)
    out = {}
    for name in TABLES:
        if name in present:
            table = db.open_table(name).to_arrow()
            table = table.drop_columns([c for c in table.column_names if c in WRITE_TIMES])
            out[name] = sorted(table.to_pylist(), key=lambda r: json.dumps(r, sort_keys=True, default=str))
    return out


@contextmanager
def deployment(base: Path):
    """A new PostgreSQL database and moto's S3; yields the environment every process shares.

    The workers take steps from the broker's one default queue, which every checkout on this
    machine shares: two test sessions at once would take each other's steps, so this one waits for
    a machine-wide lock first."""
    conn, user = pg_admin_connection()
    if conn is None:
        pytest.skip(f"PostgreSQL on {PG_HOST}:{PG_PORT} cannot be reached ({user})")
    lock = open(Path(tempfile.gettempdir()) / "memory_pipeline-celery-queue.lock", "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    db = create_database(conn)
    try:
        with moto_s3(base) as url:
            home = base / "home"
            home.mkdir()
            (home / "dagster.yaml").write_text((REPO / "deploy" / "dagster.yaml").read_text())
            (base / "logs").mkdir()
            yield {
                **os.environ, **s3_env(url),
                "DAGSTER_HOME": str(home), "DAGSTER_PG_HOST": PG_HOST, "DAGSTER_PG_PORT": str(PG_PORT),
                "DAGSTER_PG_USER": user, "DAGSTER_PG_PASSWORD": "", "DAGSTER_PG_DB": db,
                "MEMORY_PIPELINE_ROOT": str(base / "agents"), "MEMORY_PIPELINE_LANCEDB_URI": f"s3://{BUCKET}/db",
                "MEMORY_PIPELINE_EMBEDDER": "hash", "MEMORY_PIPELINE_CELERY_BROKER": BROKER,
                "MEMORY_PIPELINE_CELERY_BACKEND": f"redis://127.0.0.1:6379/{int(db[-2:], 16) % 16}",
                "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1",
                # dagster-celery starts `celery` from PATH: this interpreter's, activated or not.
                "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
            }
    finally:
        drop_database(conn, db)
        conn.close()
        lock.close()  # releases the lock


def start_workers(env: dict, base: Path, count: int = 2) -> list:
    """``count`` dagster-celery workers of one process each, configured as docs/deploy.md says."""
    config = base / "celery.yaml"
    # The workers' Celery settings are the executor's (acknowledged late, handed back if lost).
    config.write_text(json.dumps({"execution": {"config": {
        "broker": env["MEMORY_PIPELINE_CELERY_BROKER"], "backend": env["MEMORY_PIPELINE_CELERY_BACKEND"],
        "config_source": CELERY_SETTINGS}}}))
    return [start_process(f"worker{i}", [bin_path("dagster-celery"), "worker", "start", "-A", "dagster_celery.app",
                                         "-y", str(config), "-n", f"w{i}", "--", "--concurrency", "1"],
                          env, base, base / "logs") for i in range(count)]


def start_coordinator(env: dict, base: Path, plan: dict) -> subprocess.Popen:
    (base / "plan.json").write_text(json.dumps(plan))
    return subprocess.Popen([sys.executable, "-m", "memory_pipeline_tests.helpers.celery_runs", str(base / "plan.json")],
                            env=env, cwd=base, stdout=subprocess.PIPE, stderr=open(base / "logs" / "runs.log", "wb"))


def active_step(env: dict) -> tuple[int, str] | None:
    """(pid, task id) of a worker process executing a step now, as Celery's inspection reports it."""
    from celery import Celery

    app = Celery(broker=env["MEMORY_PIPELINE_CELERY_BROKER"])
    try:
        active = app.control.inspect(timeout=0.5).active() or {}
    finally:
        app.close()
    return next(((t["worker_pid"], t["id"]) for tasks in active.values() for t in tasks if t.get("worker_pid")), None)


def task_state(env: dict, task_id: str) -> str:
    """A step's state in the result backend (SUCCESS once a worker finished it)."""
    from celery import Celery

    app = Celery(broker=env["MEMORY_PIPELINE_CELERY_BROKER"], backend=env["MEMORY_PIPELINE_CELERY_BACKEND"])
    try:
        return app.AsyncResult(task_id).state
    finally:
        app.close()
