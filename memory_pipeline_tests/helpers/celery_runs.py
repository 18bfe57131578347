"""A run coordinator for the multi-worker test: runs jobs of ``memory_pipeline.definitions`` on the
instance ``DAGSTER_HOME`` names, the runs of a stage at once, each in a process of its own as a
run worker launched by the daemon is.

``python -m memory_pipeline_tests.helpers.celery_runs <plan.json>`` in the deployment's
environment: its ``MEMORY_PIPELINE_CELERY_BROKER`` makes the definitions' executor dagster-celery,
so each run process hands its steps to the workers and waits for them. The plan:
``{"register": {partitions: [keys]}, "pools": {pool: limit}, "stages": [[{"job": name, "tags":
{...}}, ...], ...]}``; one JSON line per run is printed: job, tags, run id, success. (Runs started
from threads of one process instead sometimes hung before their first event, all threads
waiting on a lock.)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import dagster as dg

from memory_pipeline.orchestration.runs import register_tenants


def run(job_name: str, tags: dict[str, str]) -> dict:
    job = dg.build_reconstructable_job("memory_pipeline.definitions", "job", reconstructable_args=(job_name,))
    with dg.DagsterInstance.get() as instance:
        result = dg.execute_job(job, instance=instance, tags=tags, raise_on_error=False)
        return {"job": job_name, "tags": tags, "run_id": result.run_id, "success": result.success}


def main(plan_path: str) -> None:
    plan = json.loads(Path(plan_path).read_text())
    with dg.DagsterInstance.get() as instance:
        for partitions, keys in plan["register"].items():
            register_tenants(instance, keys, partitions)
        for pool, limit in plan.get("pools", {}).items():  # what `dagster instance concurrency set` does
            instance.event_log_storage.set_concurrency_slots(pool, limit)
    for stage in plan["stages"]:
        procs = [subprocess.Popen([sys.executable, "-m", __spec__.name, "--run", r["job"], json.dumps(r["tags"])],
                                  stdout=subprocess.PIPE) for r in stage]
        for proc in procs:
            out, _ = proc.communicate()
            lines = [line for line in out.decode().splitlines() if line.startswith("{")]
            print(lines[-1] if lines else json.dumps({"success": False, "exit_code": proc.returncode}), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "--run":
        print(json.dumps(run(sys.argv[2], json.loads(sys.argv[3]))), flush=True)
    else:
        main(sys.argv[1])
