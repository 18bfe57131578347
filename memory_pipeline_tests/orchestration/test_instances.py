"""Proves: the two instance configurations do what README.md and docs/deploy.md say.

The top-level ``dagster.yaml`` (what ``dagster dev -w workspace.yaml`` reads from the project
root with DAGSTER_HOME unset) needs no setting at all: SQLite storage, a run queue of two, one
sensor run at a time, pools at one. ``deploy/dagster.yaml`` (PostgreSQL) stops a command with one
line naming each unset DAGSTER_PG_* variable instead of a stack trace per variable.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import yaml
from dagster._core.instance.ref import InstanceRef

from memory_pipeline.orchestration.postgres import missing_settings, postgres_config
from memory_pipeline_tests.helpers import REPO

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
