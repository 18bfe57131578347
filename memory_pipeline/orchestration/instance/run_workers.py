"""Whether a run's worker process is still alive, for run monitoring and for forgetting a tenant.

A run killed with ``kill -9`` writes no failure: its record says STARTED forever (and may hold
concurrency slots). Dagster's run monitoring (the daemon) asks the run launcher whether the worker
is alive, but the stock ``DefaultRunLauncher`` cannot tell, so monitoring only ever caught runs
that never started. ``ProcessRunLauncher`` is that launcher plus the answer: a run's worker is the
process of its first engine event that names a pid (Dagster's "Started process for run" or
"Executing steps in process"), on the host the run's ``memory_pipeline/worker_host`` tag names.
A run launched through this launcher gets the tag at launch (the launcher and the code server it
launches through share a machine: ``dagster dev`` and the one-machine deployment); the CLI's runs
get it from ``worker_tags()``. A run on another host, or with no pid yet, is reported running:
this machine cannot see it (the Docker and Kubernetes launchers check their own workers).

``end_dead_runs`` applies the same test without the daemon (the CLI has none), and
``wait_for_runs`` is what a forget does first: it lets a tenant's in-flight runs finish, cancels
its queued ones and marks dead ones failed, so nothing is written for the tenant after it.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterable

import dagster as dg
import psutil

from memory_pipeline.orchestration.dagster_adapter import (
    IN_PROGRESS_RUN_STATUSES, CheckRunHealthResult, SqliteRunStorage, WorkerStatus, run_launcher_instance,
)

WORKER_HOST_TAG = "memory_pipeline/worker_host"
# A process that started this long after the run did is another process given the same pid.
_PID_REUSE_SLACK_S = 5.0


def worker_tags() -> dict[str, str]:
    """Tags of a run executed in this process: where its worker runs."""
    return {WORKER_HOST_TAG: socket.gethostname()}


def worker_health(instance, run: dg.DagsterRun) -> CheckRunHealthResult:
    """RUNNING unless this host can see that the run's worker process is gone.

    A run without the host tag (one started before runs carried it) is taken as this host's when
    the instance keeps its runs in SQLite files, which only processes of one machine share."""
    host = run.tags.get(WORKER_HOST_TAG)
    if host is None and isinstance(instance.run_storage, SqliteRunStorage):
        host = socket.gethostname()
    if host != socket.gethostname():
        return CheckRunHealthResult(WorkerStatus.RUNNING, "the run's worker is on another host, or unknown")
    found = _worker_pid(instance, run.run_id)
    if found is None:
        return CheckRunHealthResult(WorkerStatus.RUNNING, "the run's worker has not reported its process yet")
    pid, started = found
    try:
        process = psutil.Process(pid)
        alive = process.status() != psutil.STATUS_ZOMBIE and process.create_time() <= started + _PID_REUSE_SLACK_S
    except psutil.Error:
        alive = False
    if alive:
        return CheckRunHealthResult(WorkerStatus.RUNNING, f"worker process {pid} is alive")
    return CheckRunHealthResult(
        WorkerStatus.FAILED, f"the run's worker process {pid} on {socket.gethostname()} is gone (killed?)"
    )


def _worker_pid(instance, run_id: str) -> tuple[int, float] | None:
    """The pid in the run's first engine event naming one, and that event's time."""
    records = instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT, limit=20).records
    for record in records:
        entry = record.event_log_entry
        metadata = entry.dagster_event.engine_event_data.metadata or {}
        if "pid" in metadata:
            try:
                return int(metadata["pid"].value), entry.timestamp
            except (TypeError, ValueError):
                return None
    return None


class ProcessRunLauncher(dg.DefaultRunLauncher):
    """Dagster's default launcher, which also tells run monitoring whether a worker is alive."""

    def launch_run(self, context) -> None:
        run_launcher_instance(self).add_run_tags(context.dagster_run.run_id, worker_tags())
        super().launch_run(context)

    @property
    def supports_check_run_worker_health(self) -> bool:
        return True

    def check_run_worker_health(self, run: dg.DagsterRun) -> CheckRunHealthResult:
        return worker_health(run_launcher_instance(self), run)


def in_flight_runs(instance, covers: Callable[[dg.DagsterRun], bool]) -> list[dg.DagsterRun]:
    """Runs not yet ended (queued, starting, started, cancelling) for which ``covers`` holds."""
    statuses = [*IN_PROGRESS_RUN_STATUSES, dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.CANCELING]
    return [r for r in instance.get_runs(filters=dg.RunsFilter(statuses=statuses)) if covers(r)]


def end_dead_runs(instance, runs: Iterable[dg.DagsterRun]) -> list[str]:
    """Mark failed the started runs whose worker this host sees gone; returns their ids."""
    ended = []
    for run in runs:
        if run.status not in (dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING):
            continue
        health = worker_health(instance, run)
        if health.status == WorkerStatus.FAILED:
            instance.report_run_failed(run, f"Marked failed: {health.msg}.")
            ended.append(run.run_id)
    return ended


class RunsStillInFlight(RuntimeError):
    """Runs of a tenant that did not end within the wait."""


def wait_for_runs(
    instance, covers: Callable[[dg.DagsterRun], bool], timeout_s: float, poll_s: float = 0.5
) -> list[str]:
    """Wait until no run ``covers`` selects is in flight; returns the ids of the runs waited for.

    Queued runs are cancelled (they have not written anything), runs whose worker is gone are
    marked failed, and started runs are waited for; after ``timeout_s`` RunsStillInFlight names
    those still running.
    """
    deadline = time.monotonic() + timeout_s
    seen: list[str] = []
    while True:
        runs = in_flight_runs(instance, covers)
        seen += [r.run_id for r in runs if r.run_id not in seen]
        for run in runs:
            if run.status in (dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED):
                instance.report_run_canceled(run, "Canceled: a tenant of this run is being forgotten.")
        ended = set(end_dead_runs(instance, runs))
        running = [
            r for r in runs
            if r.run_id not in ended and r.status not in (dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED)
        ]
        if not running:
            return seen
        if time.monotonic() >= deadline:
            ids = ", ".join(r.run_id for r in running)
            raise RunsStillInFlight(
                f"{len(running)} run(s) of the tenant are still running after {timeout_s:g} s ({ids}): "
                "wait for them to finish (or stop them) and run the forget again; nothing was deleted"
            )
        time.sleep(poll_s)
