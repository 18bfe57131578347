"""Proves: a run whose worker is killed (``kill -9``) is marked failed by Dagster's own run
monitoring, through the launcher every instance of the project names, while a live run is left
alone (also a run from before runs carried their host, on a SQLite home, which the CLI's own pass
marks failed); the local home the CLI writes, the top-level dagster.yaml and deploy/dagster.yaml
all turn monitoring on with that launcher.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import dagster as dg
import pytest
import yaml
from dagster._core.storage.dagster_run import DagsterRunStatus, RunsFilter
from dagster._daemon.monitoring.run_monitoring import monitor_started_run

from memory_pipeline.orchestration.instance.run_workers import WORKER_HOST_TAG, ProcessRunLauncher, end_dead_runs, in_flight_runs
from memory_pipeline.orchestration.runs import RUN_MONITORING, local_instance

REPO = Path(__file__).resolve().parents[3]

# A run executed the way the CLI executes its runs, whose one step blocks until killed.
WORKER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    import dagster as dg
    from memory_pipeline.orchestration.instance.run_workers import worker_tags

    @dg.op
    def hold():
        Path(sys.argv[2]).write_text("started")
        time.sleep(600)

    @dg.job
    def held_job():
        hold()

    held_job.execute_in_process(instance=dg.DagsterInstance.get(), tags=worker_tags() if sys.argv[3] == "tagged" else {})
    """
)


def _started_run(instance: dg.DagsterInstance):
    [record] = instance.get_run_records(filters=RunsFilter(statuses=[DagsterRunStatus.STARTED]))
    return record


@pytest.mark.parametrize("tagged", ["tagged", "untagged"])  # untagged: a run of a home made before the tag
def test_a_killed_run_is_marked_failed_by_run_monitoring_and_a_live_one_is_not(tagged, tmp_path, monkeypatch):
    home, marker = tmp_path / "home", tmp_path / "started"
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    instance = local_instance(home)  # the home the CLI makes, its dagster.yaml written
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    worker = subprocess.Popen([sys.executable, "-c", WORKER, str(home), str(marker), tagged], env=env, cwd=REPO)
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert worker.poll() is None, "the worker exited before its step started"
            assert time.monotonic() < deadline, "the worker's step never started"
            time.sleep(0.1)
        assert isinstance(instance.run_launcher, ProcessRunLauncher) and instance.run_monitoring_enabled
        logger = logging.getLogger("run_monitoring")
        monitor_started_run(instance, None, _started_run(instance), logger)
        record = _started_run(instance)  # still running: the worker is alive
        assert (WORKER_HOST_TAG in record.dagster_run.tags) == (tagged == "tagged")
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait()
    if tagged == "tagged":  # the daemon's monitoring pass
        monitor_started_run(instance, None, record, logger)
    else:  # the pass the CLI makes when it opens its home (it runs no daemon)
        assert end_dead_runs(instance, in_flight_runs(instance, lambda run: True)) == [record.dagster_run.run_id]
    run = instance.get_run_by_id(record.dagster_run.run_id)
    assert run.status == DagsterRunStatus.FAILURE
    [failure] = instance.all_logs(run.run_id, of_type=dg.DagsterEventType.RUN_FAILURE)
    assert f"worker process {worker.pid} " in failure.message and "is gone" in failure.message


def test_every_instance_configuration_turns_run_monitoring_on_with_the_launcher(tmp_path, monkeypatch):
    launcher = {"module": "memory_pipeline.orchestration.instance.run_workers", "class": "ProcessRunLauncher"}
    for path in (REPO / "dagster.yaml", REPO / "deploy" / "dagster.yaml"):
        config = yaml.safe_load(path.read_text())
        assert config["run_launcher"] == launcher, path
        assert config["run_monitoring"]["enabled"] is True and config["run_monitoring"]["max_resume_run_attempts"] == 0
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    instance = local_instance(tmp_path / "home")
    written = yaml.safe_load((tmp_path / "home" / "dagster.yaml").read_text())
    assert (written["run_launcher"], written["run_monitoring"]) == (launcher, RUN_MONITORING)
    assert isinstance(instance.run_launcher, ProcessRunLauncher)
    assert instance.run_monitoring_enabled and instance.run_monitoring_poll_interval_seconds == 30
