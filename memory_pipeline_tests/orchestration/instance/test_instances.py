"""Proves: the two instance configurations do what README.md and docs/deploy.md say.

The top-level ``dagster.yaml`` (what ``dagster dev -w workspace.yaml`` reads from the project
root with DAGSTER_HOME unset) needs no setting at all: SQLite storage, a run queue of two, one
sensor run at a time, pools at one, one retry of a run whose process died (not of a failed step). ``deploy/dagster.yaml`` (PostgreSQL) stops a command with one
line naming each unset DAGSTER_PG_* variable instead of a stack trace per variable, and keeps
its connections to PostgreSQL open between writes instead of opening one per statement.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest
import yaml
from dagster._core.instance.ref import InstanceRef
from sqlalchemy import event
from sqlalchemy.pool import Pool

from memory_pipeline.orchestration.instance.postgres import missing_settings, postgres_config
from memory_pipeline.orchestration.instance.sqlite import BATCH_SIZE, BATCH_SIZE_VARIABLE
from memory_pipeline_tests.helpers import REPO
from memory_pipeline_tests.production.service import PG_HOST, PG_PORT, create_database, drop_database, pg_admin_connection

PG_VARIABLES = ("DAGSTER_PG_HOST", "DAGSTER_PG_PORT", "DAGSTER_PG_USER", "DAGSTER_PG_PASSWORD", "DAGSTER_PG_DB")


def test_local_instance_needs_no_setting(tmp_path, monkeypatch):
    for name in PG_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    # As `dagster dev` builds it: storage in a fresh folder, configuration from the project root.
    with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(tmp_path), config_dir=str(REPO))) as instance:
        assert type(instance.run_storage).__name__ == "SqliteRunStorage"
        assert type(instance.run_coordinator).__name__ == "QueuedRunCoordinator"
        limits = instance.get_concurrency_config()
        assert limits.run_queue_config.max_concurrent_runs == 2
        assert [(t["key"], t["value"], t["limit"]) for t in limits.run_queue_config.tag_concurrency_limits] == [
            ("memory_pipeline/trigger", "workspace_sensor", 1)
        ]
        assert (limits.pool_config.default_pool_limit, limits.pool_config.pool_granularity.value) == (1, "op")
        assert (
            instance.run_retries_enabled, instance.run_retries_max_retries, instance.run_retries_retry_on_asset_or_op_failure
        ) == (True, 1, False)


def test_production_instance_names_each_missing_postgres_setting(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text((REPO / "deploy" / "dagster.yaml").read_text())
    env = {k: v for k, v in os.environ.items() if k not in PG_VARIABLES}
    env.update(DAGSTER_HOME=str(home), DAGSTER_PG_HOST="127.0.0.1", PYTHONPATH=str(REPO))
    done = subprocess.run(
        [str(Path(sys.executable).parent / "dagster"), "instance", "info"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 1
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: DAGSTER_PG_USER, DAGSTER_PG_DB not set:")
    assert "Traceback" not in done.stderr


def test_production_storage_is_dagster_postgres_with_variable_references():
    environ = {"DAGSTER_PG_HOST": "db", "DAGSTER_PG_USER": "u", "DAGSTER_PG_DB": "d", "DAGSTER_PG_PORT": "6543"}
    assert missing_settings(environ) == []
    assert missing_settings({"DAGSTER_PG_HOST": "db"}) == ["DAGSTER_PG_USER", "DAGSTER_PG_DB"]
    # The values stay in the environment: a run worker's instance reference holds only their names.
    assert postgres_config(environ) == {
        "postgres_db": {
            "hostname": {"env": "DAGSTER_PG_HOST"}, "username": {"env": "DAGSTER_PG_USER"},
            "db_name": {"env": "DAGSTER_PG_DB"}, "port": {"env": "DAGSTER_PG_PORT"},
            "scheme": "postgresql+psycopg2",
        }
    }
    deploy = yaml.safe_load((REPO / "deploy" / "dagster.yaml").read_text())
    assert deploy["storage"]["custom"]["class"] == "PostgresStorageFromEnvironment"
    assert deploy["concurrency"]["pools"]["default_limit"] == 1


@dg.asset
def first() -> int:
    return 1


@dg.asset
def second(first: int) -> int:
    return first + 1


@dg.asset
def third(second: int) -> int:
    return second + 1


def test_production_instance_keeps_its_connections_between_writes(tmp_path, monkeypatch):
    """A run's events reuse the process's connections (the stock storages opened several per event),
    and a kept connection the server has closed is replaced before it fails a write."""
    admin, user = pg_admin_connection()
    if admin is None:
        pytest.skip(f"PostgreSQL on {PG_HOST}:{PG_PORT} cannot be reached ({user}); start it, see docs/deploy.md")
    name = create_database(admin)
    opened: list[object] = []

    def count(dbapi_connection, record):
        opened.append(dbapi_connection)

    try:
        home = tmp_path / "home"
        home.mkdir()
        (home / "dagster.yaml").write_text((REPO / "deploy" / "dagster.yaml").read_text())
        for variable, value in {"DAGSTER_PG_HOST": PG_HOST, "DAGSTER_PG_PORT": str(PG_PORT), "DAGSTER_PG_USER": user, "DAGSTER_PG_DB": name}.items():
            monkeypatch.setenv(variable, value)
        monkeypatch.delenv("DAGSTER_PG_PASSWORD", raising=False)
        monkeypatch.delenv(BATCH_SIZE_VARIABLE, raising=False)
        event.listen(Pool, "connect", count)  # every new connection of every engine in this process
        # As a run worker builds it: from the instance reference of the folder's dagster.yaml.
        with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home))) as instance:
            assert os.environ[BATCH_SIZE_VARIABLE] == str(BATCH_SIZE)  # Dagster hands over batches of events
            during, events = [], []
            for _ in range(2):
                before = len(opened)
                result = dg.materialize([first, second, third], instance=instance)
                during.append(len(opened) - before)
                events.append(len(instance.all_logs(result.run_id)))
            # The server closes every kept connection (as a restart does): the next run replaces them.
            with admin.cursor() as cur:
                cur.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,))
                assert cur.fetchall(), "the instance kept no connection open"
            after_restart = dg.materialize([first, second, third], instance=instance)
    finally:
        event.remove(Pool, "connect", count)
        drop_database(admin, name)
        admin.close()
    assert result.success and result.output_for_node("third") == 3
    assert after_restart.success and after_restart.output_for_node("third") == 3
    assert min(events) >= 20, events
    # The stock storages opened 74 connections for the first run's 34 events, and as many again for
    # the second. Pooled: the first run opens the kept ones and the second only the few a nested
    # write needs beside them (overflow connections are closed when given back).
    assert during[0] <= 8 and during[1] <= 3, (during, events)
