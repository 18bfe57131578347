"""A run coordinator for the multi-worker test: runs jobs of ``memory_pipeline.definitions`` on the
instance ``DAGSTER_HOME`` names, as a run worker does, the runs of a stage at once.

Run as ``python -m memory_pipeline_tests.helpers.celery_runs <plan.json>`` in the deployment's
environment: its ``MEMORY_PIPELINE_CELERY_BROKER`` makes the definitions' executor dagster-celery,
so each run hands its steps to the workers and only waits for them here (one thread a run). The
plan: ``{"register": {partitions: [keys]}, "pools": {pool: limit}, "stages": [[{"job": name,
"tags": {...}}, ...], ...]}``;
it prints one JSON line per run: job, tags, run id, success.
"""

from __future__ import annotations

import importlib
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import dagster as dg

from memory_pipeline.orchestration.runs import register_tenants


def _run(job_name: str, tags: dict[str, str]) -> dict:
    job = dg.build_reconstructable_job("memory_pipeline.definitions", "job", reconstructable_args=(job_name,))
    with dg.DagsterInstance.get() as instance:
        result = dg.execute_job(job, instance=instance, tags=tags, raise_on_error=False)
        return {"job": job_name, "tags": tags, "run_id": result.run_id, "success": result.success}


def main(plan_path: str) -> None:
    plan = json.loads(Path(plan_path).read_text())
    # The code location loads here, once, before the threads rebuild their runs' jobs from it:
    # runs started from several threads while it was first being imported hung before their first step.
    importlib.import_module("memory_pipeline.definitions")
    with dg.DagsterInstance.get() as instance:
        for partitions, keys in plan["register"].items():
            register_tenants(instance, keys, partitions)
        for pool, limit in plan.get("pools", {}).items():  # what `dagster instance concurrency set` does
            instance.event_log_storage.set_concurrency_slots(pool, limit)
    for stage in plan["stages"]:
        with ThreadPoolExecutor(len(stage)) as pool:
            for outcome in pool.map(lambda run: _run(run["job"], run["tags"]), stage):
                print(json.dumps(outcome), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
