"""What every sensor of the pipeline does around its own planning: read the JSON cursor of the
last tick, tag its run requests, register tenants the instance does not know yet and hand back
one ``SensorResult`` with the new cursor.

The cursor is written with sorted keys, so a tick that changed nothing writes the same string,
and every cursor a sensor stored before reads back unchanged.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterable, Mapping, Sequence

import dagster as dg

from memory_pipeline.orchestration.automation import sensor_status
from memory_pipeline.orchestration.partitions import TENANTS_PARTITION, tenant_partitions
from memory_pipeline.orchestration.runs import range_tags

TAG_PREFIX = "memory_pipeline/"


def pipeline_sensor(job, every_seconds: int):
    """The decorator of a pipeline sensor: it requests ``job``, starts in the state
    ``MEMORY_PIPELINE_AUTOMATION`` gives (stopped, so a first start launches nothing, unless a
    deployment says ``running``) and ticks at most every ``every_seconds``. The function's
    docstring, on one line, is the description the UI shows."""

    def decorate(fn):
        description = " ".join((inspect.getdoc(fn) or "").split())
        return dg.sensor(
            job=job, minimum_interval_seconds=every_seconds, default_status=sensor_status(), description=description,
        )(fn)

    return decorate


def read_cursor(context: dg.SensorEvaluationContext) -> dict:
    """The cursor the last tick wrote, or ``{}`` on a sensor's first tick."""
    return json.loads(context.cursor) if context.cursor else {}


def write_cursor(cursor: dict) -> str:
    return json.dumps(cursor, sort_keys=True)


def tagged_run_request(
    partition_key, run_key: str, trigger: str, partition_range: tuple[str, str] | None = None, **tags: object
) -> dg.RunRequest:
    """A run request tagged ``memory_pipeline/trigger`` with the sensor that asked for it, and
    ``memory_pipeline/<name>`` for each further tag (a count the run's page shows).

    ``partition_range`` (first, last), instead of a ``partition_key``: one run over every partition
    from the first to the last, as a single-run backfill makes it (Dagster's range tags)."""
    own = {f"{TAG_PREFIX}{name}": str(value) for name, value in {"trigger": trigger, **tags}.items()}
    if partition_range is not None:
        own = {**range_tags(*partition_range), **own}
    return dg.RunRequest(partition_key=partition_key, run_key=run_key, tags=own)


def tick_result(
    context: dg.SensorEvaluationContext,
    run_requests: list[dg.RunRequest],
    cursor: dict,
    skip_reason: str,
    tenants: Iterable[str] = (),
    partitions: dg.DynamicPartitionsDefinition = tenant_partitions,
    also_register: Mapping[str, Iterable[str]] | None = None,
    asset_events: Sequence[dg.AssetObservation] = (),
    remove: Mapping[str, Iterable[str]] | None = None,
) -> dg.SensorResult:
    """The tick's answer: its run requests, the new cursor, a partition of ``partitions`` (the
    tenants, by default) for each of ``tenants`` not registered yet (and of each dynamic partition
    set named in ``also_register``), a deletion of each key of ``remove`` ({partition set: keys})
    the instance holds, the observations it made, and ``skip_reason`` when it requests nothing."""
    wanted = {partitions.name or TENANTS_PARTITION: set(tenants)}
    for name, keys in (also_register or {}).items():
        wanted.setdefault(name, set()).update(keys)
    requests = []
    for name, keys in wanted.items():
        new = sorted(keys - set(context.instance.get_dynamic_partitions(name))) if keys else []
        if new:
            requests.append(dg.DynamicPartitionsDefinition(name=name).build_add_request(new))
    for name, keys in (remove or {}).items():
        held = sorted(set(keys) & set(context.instance.get_dynamic_partitions(name)))
        if held:
            requests.append(dg.DynamicPartitionsDefinition(name=name).build_delete_request(held))
    return dg.SensorResult(
        run_requests=run_requests,
        dynamic_partitions_requests=requests,
        cursor=write_cursor(cursor),
        skip_reason=None if run_requests else skip_reason,
        asset_events=list(asset_events),
    )
