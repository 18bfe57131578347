"""Proves: several worker processes of an existing engine (two dagster-celery workers over
RabbitMQ, results in Redis) sharing one PostgreSQL instance and LanceDB on an S3 API (moto) index
and consolidate 20 tenants, in concurrent runs, into exactly the rows the single-process run
writes (same embedder, the hashing one, on both sides); a worker process killed in the middle of a
step has that step run again by another worker (Celery hands the unacknowledged step back to the
broker) and every run still succeeds with the same rows; no table holds a duplicate id. This is
docs/deploy.md's tested multi-worker path.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import lancedb
import pytest

from memory_pipeline.consolidation.assets import consolidation_assets, consolidation_job
from memory_pipeline.consolidation.launch import completed_partitions
from memory_pipeline.consolidation.partitions import consolidation_key
from memory_pipeline.l0.assets import l0_assets, l0_index_job
from memory_pipeline.orchestration.partitions import SESSION_TENANTS_PARTITION, TENANTS_PARTITION
from memory_pipeline.orchestration.runs import range_tags, register_tenants
from memory_pipeline.orchestration.resources import CELERY_SETTINGS
from memory_pipeline_tests.helpers import make_resources, write
from memory_pipeline_tests.helpers.consolidation import jsonl, say
from memory_pipeline_tests.helpers.object_store import BUCKET, moto_s3, s3_env
from memory_pipeline_tests.production.service import (
    PG_HOST,
    PG_PORT,
    REPO,
    bin_path,
    create_database,
    drop_database,
    pg_admin_connection,
    start_process,
    stop_process,
)

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

TENANTS = [f"u{i:02d}" for i in range(20)]
NAMES = ("Alice", "Bruno", "Chen", "Dana", "Emeka")
CITIES = ("Lisbon", "Oslo", "Nairobi", "Quito", "Hanoi")
BROKER = "amqp://guest:guest@127.0.0.1:5672//"
# Tables whose rows the runs write; columns that hold when a row was written, not what it says.
TABLES = ("chunks", "files", "episodes", "entities", "relations")
WRITE_TIMES = {"updated_at", "created_at", "indexed_at", "expires_at", "seen_at"}


def build_workspace(root: Path) -> None:
    for i, user in enumerate(TENANTS):
        name, city = NAMES[i % len(NAMES)], CITIES[(i // len(NAMES)) % len(CITIES)]
        write(root, f"bot/users/{user}/MEMORY.md", f"# {name}\n\n{name} lives in {city} and prefers tea to coffee.\n")
        day = "2026-11-10"
        write(root, f"bot/sessions/{user}/s{i}.jsonl", jsonl(
            say("user", f"I moved to {city} last spring with my sister Maya.", f"{day}T09:00:00Z", "t1"),
            say("assistant", f"Noted: you live in {city} now.", f"{day}T09:00:05Z", "t2"),
            say("user", f"My manager {name} approved the Falcon project budget today.", f"{day}T09:01:00Z", "t3"),
            completed=f"{day}T09:02:00Z"))


def run_plan(root: Path) -> dict:
    """The runs of both deployments: the L0 index of each half of the tenants, then their
    consolidation (their sessions completed on one day), each half a run over a range of partitions,
    as a single-run backfill makes them."""
    keys = [f"bot~{u}" for u in TENANTS]
    halves = (keys[: len(keys) // 2], keys[len(keys) // 2 :])
    [day] = sorted({day for day, _ in completed_partitions(root, idle_minutes=30)})
    return {
        "register": {TENANTS_PARTITION: keys, SESSION_TENANTS_PARTITION: keys},
        "stages": [
            [{"job": "l0_index_job", "tags": range_tags(half[0], half[-1])} for half in halves],
            [{"job": "consolidation_job", "tags": range_tags(consolidation_key(day, half[0]), consolidation_key(day, half[-1]))}
             for half in halves],
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
    db = lancedb.connect(uri)
    present = set(db.list_tables().tables)
    out = {}
    for name in TABLES:
        if name not in present:
            continue
        table = db.open_table(name).to_arrow()
        table = table.drop_columns([c for c in table.column_names if c in WRITE_TIMES])
        out[name] = sorted(table.to_pylist(), key=lambda r: json.dumps(r, sort_keys=True, default=str))
    return out


@pytest.fixture(scope="module")
def deployment(tmp_path_factory):
    """PostgreSQL (a new database), moto's S3 and the environment every process of the deployment
    shares; yields (env, base folder)."""
    conn, user = pg_admin_connection()
    if conn is None:
        pytest.skip(f"PostgreSQL on 127.0.0.1:5432 cannot be reached ({user})")
    base = tmp_path_factory.mktemp("celery")
    db = create_database(conn)
    try:
        with moto_s3(base) as url:
            home = base / "home"
            home.mkdir()
            (home / "dagster.yaml").write_text((REPO / "deploy" / "dagster.yaml").read_text())
            env = {
                **os.environ, **s3_env(url),
                "DAGSTER_HOME": str(home), "DAGSTER_PG_HOST": PG_HOST, "DAGSTER_PG_PORT": str(PG_PORT),
                "DAGSTER_PG_USER": user, "DAGSTER_PG_PASSWORD": "", "DAGSTER_PG_DB": db,
                "MEMORY_PIPELINE_ROOT": str(base / "agents"), "MEMORY_PIPELINE_LANCEDB_URI": f"s3://{BUCKET}/db",
                "MEMORY_PIPELINE_EMBEDDER": "hash", "MEMORY_PIPELINE_CELERY_BROKER": BROKER,
                "MEMORY_PIPELINE_CELERY_BACKEND": f"redis://127.0.0.1:6379/{int(db[-2:], 16) % 16}",
                "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1",
            }
            subprocess.run([bin_path("dagster"), "instance", "migrate"], env=env, check=True, capture_output=True)
            for pool in ("embedding", "lancedb_write", "consolidation_write"):
                subprocess.run([bin_path("dagster"), "instance", "concurrency", "set", pool, "1"], env=env, check=True,
                               capture_output=True)
            yield env, base
    finally:
        drop_database(conn, db)
        conn.close()


def start_workers(env: dict, base: Path, count: int = 2) -> list:
    config = base / "celery.yaml"
    # The workers' Celery settings are the executor's (acknowledged late, handed back if lost).
    config.write_text(json.dumps({"execution": {"config": {
        "broker": env["MEMORY_PIPELINE_CELERY_BROKER"], "backend": env["MEMORY_PIPELINE_CELERY_BACKEND"],
        "config_source": CELERY_SETTINGS}}}))
    (base / "logs").mkdir(exist_ok=True)
    return [start_process(f"worker{i}", [bin_path("dagster-celery"), "worker", "start", "-A", "dagster_celery.app",
                                         "-y", str(config), "-n", f"w{i}", "--", "--concurrency", "1"],
                          env, base, base / "logs") for i in range(count)]


def active_step_pid(env: dict) -> int | None:
    """The pid of a worker process executing a step now, as Celery's own inspection reports it."""
    from celery import Celery

    app = Celery(broker=env["MEMORY_PIPELINE_CELERY_BROKER"])
    try:
        active = app.control.inspect(timeout=0.5).active() or {}
    finally:
        app.close()
    return next((task["worker_pid"] for tasks in active.values() for task in tasks if task.get("worker_pid")), None)


def test_two_workers_write_the_rows_of_one_process_even_when_a_worker_dies(deployment, tmp_path, monkeypatch):
    env, base = deployment
    root = Path(env["MEMORY_PIPELINE_ROOT"])
    build_workspace(root)
    runs = run_plan(root)
    single_process(root, str(tmp_path / "reference"), runs)
    expected = rows(str(tmp_path / "reference"))
    assert len(expected["chunks"]) >= 2 * len(TENANTS) and len(expected["episodes"]) == len(TENANTS)

    plan = base / "plan.json"
    plan.write_text(json.dumps(runs))
    workers = start_workers(env, base)
    try:
        coordinator = subprocess.Popen([sys.executable, "-m", "memory_pipeline_tests.helpers.celery_runs", str(plan)],
                                       env=env, cwd=base, stdout=subprocess.PIPE, stderr=open(base / "logs" / "runs.log", "wb"))
        killed = None
        deadline = time.monotonic() + 120
        while killed is None and coordinator.poll() is None and time.monotonic() < deadline:
            killed = active_step_pid(env)  # the first step a worker runs: a worker process dies in it
            if killed is not None:
                os.kill(killed, signal.SIGKILL)
        out, _ = coordinator.communicate(timeout=600)
    finally:
        for worker in workers:
            stop_process(worker)
    outcomes = [json.loads(line) for line in out.decode().splitlines() if line.startswith("{")]
    logs = "\n".join((base / "logs" / name).read_text(errors="replace")[-3000:] for name in ("runs.log", "worker0.log", "worker1.log"))
    assert killed is not None, logs
    assert len(outcomes) == 4 and all(o["success"] for o in outcomes), (outcomes, logs)

    for key, value in s3_env(env["AWS_ENDPOINT"]).items():
        monkeypatch.setenv(key, value)
    got = rows(env["MEMORY_PIPELINE_LANCEDB_URI"])
    assert got == expected
    for name, table in got.items():
        ids = [r["id"] for r in table if "id" in r]
        assert len(ids) == len(set(ids)), f"duplicate ids in {name}"
