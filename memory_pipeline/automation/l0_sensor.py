"""The workspace sensor: registers new tenants and requests an L0 run for each changed tenant.

It only lists and stats files (never reads or embeds), so a tick over 10,000 files stays far
inside the 60-second sensor budget. Its cursor maps each tenant to a fingerprint of its files'
(path, size, mtime); a tick where no fingerprint moved requests nothing.
"""


import json
import time

import dagster as dg

from memory_pipeline.assets.l0_index import l0_index_job
from memory_pipeline.partitions import TENANTS_PARTITION, tenant_partitions
from memory_pipeline.resources import WorkspaceResource
from memory_pipeline.sources.workspace import scan_workspace, tenant_fingerprint

GONE = "gone"


def plan_l0_runs(scan, cursor: dict[str, str], known_partitions: set[str]) -> tuple[list[dg.RunRequest], list[str], dict[str, str]]:
    """What one tick asks for: (run requests, partitions to add, new cursor)."""
    new_cursor = {t.key: tenant_fingerprint(files) for t, files in scan.files.items()}
    for key, value in cursor.items():
        if key not in new_cursor and value != GONE:
            new_cursor[key] = GONE  # the tenant's folder vanished: one run removes its chunks
    requests = [
        dg.RunRequest(partition_key=key, run_key=f"l0:{key}:{fingerprint}", tags={"memory_pipeline/trigger": "workspace_sensor"})
        for key, fingerprint in sorted(new_cursor.items())
        if cursor.get(key) != fingerprint
    ]
    new_partitions = sorted(k for k in new_cursor if k not in known_partitions and new_cursor[k] != GONE)
    return requests, new_partitions, new_cursor


@dg.sensor(
    job=l0_index_job,
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Registers new tenants and requests an L0 index run for every tenant whose files changed.",
)
def workspace_sensor(context: dg.SensorEvaluationContext, workspace: WorkspaceResource) -> dg.SensorResult:
    started = time.perf_counter()
    scan = scan_workspace(workspace.root_path, workspace.include, workspace.exclude)
    cursor = json.loads(context.cursor) if context.cursor else {}
    known = set(context.instance.get_dynamic_partitions(TENANTS_PARTITION))
    requests, new_partitions, new_cursor = plan_l0_runs(scan, cursor, known)
    for path, reason in scan.skipped[:20]:
        context.log.warning(f"scan skipped {path}: {reason}")
    files = sum(len(f) for f in scan.files.values())
    context.log.info(f"scanned {files} files of {len(scan.files)} tenants in {time.perf_counter() - started:.2f}s")
    return dg.SensorResult(
        run_requests=requests,
        dynamic_partitions_requests=[tenant_partitions.build_add_request(new_partitions)] if new_partitions else [],
        cursor=json.dumps(new_cursor, sort_keys=True),
        skip_reason=None if requests else f"no change in {files} files of {len(scan.files)} tenants",
    )
