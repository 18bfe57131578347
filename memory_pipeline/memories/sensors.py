"""The typed-memories sensor: extracts again the tenants whose sources the workspace sensor saw move.

It reads no file: it follows the observations of ``markdown_memory`` and ``session_transcripts``
that the workspace sensor records for each tenant whose files changed, so the workspace is
scanned once per tick for every slice. A sensor, not declarative automation: the sources are
external assets that nothing materializes, and their observations alone do not count as updates
for an automation condition. Its cursor holds the last observation read of each source.
"""

import dagster as dg

from memory_pipeline.memories.assets import typed_memories_job
from memory_pipeline.orchestration.sensor_ticks import pipeline_sensor, read_cursor, tagged_run_request, tick_result
from memory_pipeline.orchestration.sources import MARKDOWN_MEMORY, SESSION_TRANSCRIPTS

MAX_EVENTS_PER_TICK = 5000


def plan_memories_runs(instance: dg.DagsterInstance, cursor: dict) -> tuple[dict[str, int], dict]:
    """({tenant: storage id of its newest observation}, new cursor) for observations after the cursor."""
    newest: dict[str, int] = {}
    new_cursor = dict(cursor)
    for source in (MARKDOWN_MEMORY, SESSION_TRANSCRIPTS):
        records = instance.fetch_observations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey(source), after_storage_id=cursor.get(source)),
            limit=MAX_EVENTS_PER_TICK, ascending=True,
        ).records
        for record in records:
            if record.partition_key:
                newest[record.partition_key] = max(newest.get(record.partition_key, 0), record.storage_id)
        if records:
            new_cursor[source] = records[-1].storage_id
    return newest, new_cursor


@pipeline_sensor(typed_memories_job, 30)
def typed_memories_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
    """Requests typed-memory extraction for every tenant whose Markdown memory or transcripts
    the workspace sensor observed changing."""
    newest, new_cursor = plan_memories_runs(context.instance, read_cursor(context))
    requests = [
        tagged_run_request(tenant, f"typed_memories:{tenant}:{storage_id}", trigger="typed_memories_sensor")
        for tenant, storage_id in sorted(newest.items())
    ]
    return tick_result(context, requests, new_cursor, skip_reason="no source observed changing since the last tick")
