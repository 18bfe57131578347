"""The workspace sensor: registers new tenants, observes the source assets and requests an L0
run for each changed tenant.

It only lists and stats files (never reads or embeds), so a tick over 10,000 files stays far
inside the 60-second sensor budget. Its cursor maps each tenant to a fingerprint of its files'
(path, size, mtime); a tick where no fingerprint moved requests and records nothing. For every
tenant that moved it records an observation of ``markdown_memory`` and ``session_transcripts``
(files, bytes, newest change), which the typed-memories sensor follows. A tenant whose folder
is gone gets one run that removes its chunks; once that run has succeeded, a later tick removes
the tenant's partitions and forgets it.
"""


import time

import dagster as dg

from memory_pipeline.l0.assets import l0_index_job
from memory_pipeline.orchestration.partitions import SESSION_TENANTS_PARTITION
from memory_pipeline.orchestration.resources import WorkspaceResource
from memory_pipeline.orchestration.sensor_ticks import pipeline_sensor, read_cursor, tagged_run_request, tick_result
from memory_pipeline.orchestration.sources import source_observations
from memory_pipeline.orchestration.tenant_keys import TENANT_PARTITION_SETS
from memory_pipeline.sources.workspace import KIND_SESSIONS, scan_workspace, tenant_fingerprint

GONE = "gone"
RUN_KEY_TAG = "dagster/run_key"  # the tag Dagster puts on a sensor's run with its run key


def run_key(key: str, fingerprint: str) -> str:
    return f"l0:{key}:{fingerprint}"


def plan_l0_runs(
    scan, cursor: dict[str, str], cleaned: set[str] = frozenset()
) -> tuple[list[dg.RunRequest], dict[str, str]]:
    """What one tick asks for: (run requests, new cursor). ``cleaned``: gone tenants whose run
    removing their chunks has succeeded; they leave the cursor (and their partitions go)."""
    new_cursor = {t.key: tenant_fingerprint(files) for t, files in scan.files.items()}
    for key, value in cursor.items():
        if key not in new_cursor and key not in cleaned:
            new_cursor[key] = GONE  # the tenant's folder vanished: one run removes its chunks
    requests = [
        tagged_run_request(key, run_key(key, fingerprint), trigger="workspace_sensor")
        for key, fingerprint in sorted(new_cursor.items())
        if cursor.get(key) != fingerprint
    ]
    return requests, new_cursor


@pipeline_sensor(l0_index_job, 30)
def workspace_sensor(context: dg.SensorEvaluationContext, workspace: WorkspaceResource) -> dg.SensorResult:
    """Registers new tenants and requests an L0 index run for every tenant whose files changed."""
    started = time.perf_counter()
    scan = scan_workspace(workspace.root_path)
    cursor = read_cursor(context)
    present = {t.key for t in scan.files}
    cleaned = {
        key for key, value in cursor.items()
        if value == GONE and key not in present and _succeeded(context.instance, run_key(key, GONE))
    }
    requests, new_cursor = plan_l0_runs(scan, cursor, cleaned)
    for key in sorted(cleaned):
        context.log.info(f"tenant {key} is gone and its chunks removed: its partitions are removed")
    for path, reason in scan.skipped[:20]:
        context.log.warning(f"scan skipped {path}: {reason}")
    files = sum(len(f) for f in scan.files.values())
    context.log.info(f"scanned {files} files of {len(scan.files)} tenants in {time.perf_counter() - started:.2f}s")
    by_key = {t.key: tenant_files for t, tenant_files in scan.files.items()}
    moved = [r.partition_key for r in requests if r.partition_key in by_key]
    return tick_result(
        context,
        requests,
        new_cursor,
        skip_reason=f"no change in {files} files of {len(scan.files)} tenants",
        tenants=list(by_key),
        also_register={SESSION_TENANTS_PARTITION: [k for k, fs in by_key.items() if any(f.kind == KIND_SESSIONS for f in fs)]},
        asset_events=source_observations((key, by_key[key]) for key in moved),
        remove={name: cleaned for name in TENANT_PARTITION_SETS} if cleaned else None,
    )


def _succeeded(instance: dg.DagsterInstance, key: str) -> bool:
    runs = instance.get_run_records(dg.RunsFilter(tags={RUN_KEY_TAG: key}, statuses=[dg.DagsterRunStatus.SUCCESS]), limit=1)
    return bool(runs)
