"""Forgetting tenants in the Dagster instance, and only them.

A run may cover one tenant (a sensor's run) or many (a backfill over a range of partitions runs
once, to load the model once). A run of forgotten tenants only is deleted whole: its events, its
compute logs and its cached materializations. A run shared with other tenants is kept for them:

- the forgotten tenants' own event records (their partitions' materializations, observations,
  check evaluations and the tags indexing them) are deleted, row by row, in the run's event
  storage and in the asset index;
- what the run shares and cannot split is stopped being shared: the text metadata it reports
  for all its tenants at once (previews, skip tables, JSON, on the run's observation of each
  asset) is replaced by a note, numbers stay; log messages naming a forgotten tenant are deleted; the run's
  compute logs (the captured output of every step, for all its tenants) are deleted.

SQLite storage is vacuumed afterwards, so freed pages do not keep the bytes.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import dagster as dg

from memory_pipeline.orchestration.dagster_adapter import (
    AssetCheckExecutionsTable, AssetEventTagsTable, AssetKeyTable, RunsTable, SqlEventLogStorage, SqlEventLogStorageTable,
    compute_log_directory,
)

log = logging.getLogger(__name__)

PARTITION_TAG = "dagster/partition"
TENANT_DIMENSION_TAG = "dagster/partition/tenant"
RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"
REMOVED = "(removed: a tenant of this run was forgotten)"
# Metadata kinds that hold text; numbers, booleans and timestamps carry no one's words.
_TEXT_METADATA = {
    "TextMetadataEntryData", "MarkdownMetadataEntryData", "JsonMetadataEntryData", "TableMetadataEntryData",
    "PathMetadataEntryData", "UrlMetadataEntryData", "NotebookMetadataEntryData",
    "TableSchemaMetadataEntryData", "TableColumnLineageMetadataValue",
}


@dataclass
class InstanceForgetReport:
    partitions_deleted: list[str] = field(default_factory=list)
    runs_deleted: int = 0
    runs_split: int = 0  # shared runs kept for other tenants, the forgotten ones' records removed
    events_deleted: int = 0
    events_rewritten: int = 0
    compute_logs_deleted: int = 0  # runs whose captured step output was deleted


def forget_in_instance(instance, tenants: list[str]) -> InstanceForgetReport:
    """Delete the tenants' partitions, their own runs, and their records in shared runs."""
    from memory_pipeline.orchestration.partitions import SESSION_TENANTS_PARTITION, TENANTS_PARTITION

    orders = _orders(instance)
    position = orders[TENANTS_PARTITION][1]
    wanted = set(tenants)
    report = InstanceForgetReport()
    own, shared = set(), set()
    for record in instance.get_run_records():
        covered = _run_tenants(record.dagster_run, orders)
        if covered & wanted:
            (own if covered <= wanted else shared).add(record.dagster_run.run_id)
    for run_id in sorted(own):
        instance.delete_run(run_id)
    _delete_check_executions(instance, own)
    for record in instance.get_run_records():
        if record.dagster_run.run_id in shared:
            _narrow_range(instance, record.dagster_run, *_order_of(record.dagster_run, orders), wanted)
    for run_id in sorted(own | shared):
        if _delete_compute_logs(instance, run_id):
            report.compute_logs_deleted += 1
    report.runs_deleted = len(own)
    if shared:
        deleted, rewritten = _split_shared_runs(instance, shared, wanted)
        report.runs_split, report.events_deleted, report.events_rewritten = len(shared), deleted, rewritten
    report.partitions_deleted = [k for k in tenants if k in position]
    for key in report.partitions_deleted:
        instance.delete_dynamic_partition(TENANTS_PARTITION, key)
    for key in wanted & set(instance.get_dynamic_partitions(SESSION_TENANTS_PARTITION)):
        instance.delete_dynamic_partition(SESSION_TENANTS_PARTITION, key)
    _clear_cached_materializations(instance, own | shared, shared)
    return report


def runs_covering(instance, wanted: Callable[[str], bool]) -> Callable[[dg.DagsterRun], bool]:
    """Whether a run covers a tenant key ``wanted`` selects (partitions as registered now)."""
    orders = _orders(instance)
    return lambda run: any(wanted(key) for key in _run_tenants(run, orders))


Order = tuple[list[str], dict[str, int]]  # partition keys in the instance's order, and each one's index


def _orders(instance) -> dict[str, Order]:
    """The keys of both tenant partition sets, in the instance's order (a range covers the keys
    between its ends in the order of its own set)."""
    from memory_pipeline.orchestration.partitions import SESSION_TENANTS_PARTITION, TENANTS_PARTITION

    orders = {}
    for name in (TENANTS_PARTITION, SESSION_TENANTS_PARTITION):
        keys = list(instance.get_dynamic_partitions(name))
        orders[name] = (keys, {k: i for i, k in enumerate(keys)})
    return orders


def _order_of(run: dg.DagsterRun, orders: dict[str, Order]) -> Order:
    """The partition set a run's keys belong to: the session tenants for the jobs partitioned by
    them (a range of session tenants covers other keys than the same range of tenants)."""
    from memory_pipeline.orchestration.partitions import SESSION_TENANT_JOBS, SESSION_TENANTS_PARTITION, TENANTS_PARTITION

    return orders[SESSION_TENANTS_PARTITION if run.job_name in SESSION_TENANT_JOBS else TENANTS_PARTITION]


def _run_tenants(run: dg.DagsterRun, orders: dict[str, Order]) -> set[str]:
    """The tenant partitions a run covered, from its tags."""
    from memory_pipeline.orchestration.partitions import TENANTS_PARTITION

    tags = run.tags
    ordered, position = _order_of(run, orders)
    for tag in (PARTITION_TAG, TENANT_DIMENSION_TAG):
        if tag in tags and tags[tag] in position:
            return {tags[tag]}
    start, end = tags.get(RANGE_START_TAG, ""), tags.get(RANGE_END_TAG, "")
    if start in position and end in position:
        return set(ordered[position[start] : position[end] + 1])
    # A range of (day, tenant) keys ("2026-10-01|bot~bob" to "2026-10-09|bot~bob"), as consolidation
    # launched them while it was partitioned by day x tenant: one per tenant; a range spanning
    # tenants covers those between its ends.
    ordered, position = orders[TENANTS_PARTITION]
    first, last = start.rpartition("|")[2], end.rpartition("|")[2]
    if "|" in start and first == last:
        return {first}
    if "|" not in start or first not in position or last not in position:
        return set()
    lo, hi = sorted((position[first], position[last]))
    return set(ordered[lo : hi + 1])


def _narrow_range(instance, run, ordered: list[str], position: dict[str, int], wanted: set[str]) -> None:
    """A shared run's range tags name its first and last tenant: when one of those is forgotten,
    the tag moves to the nearest tenant the run kept (the range still covers what remains)."""
    if run.tags[RANGE_START_TAG] not in position or run.tags[RANGE_END_TAG] not in position:
        return  # a range of (day, tenant) keys: its tenants' records are split like any shared run's
    covered = [k for k in ordered[position[run.tags[RANGE_START_TAG]] : position[run.tags[RANGE_END_TAG]] + 1]]
    kept = [k for k in covered if k not in wanted]
    tags = {}
    if run.tags[RANGE_START_TAG] in wanted:
        tags[RANGE_START_TAG] = kept[0]
    if run.tags[RANGE_END_TAG] in wanted:
        tags[RANGE_END_TAG] = kept[-1]
    if not tags:
        return
    instance.add_run_tags(run.run_id, tags)
    # The run's stored body keeps its partition range too (for the UI's backfill view).
    ends = {"start": kept[0], "end": kept[-1]}

    def narrow(value):
        if isinstance(value, dict):
            if value.get("__class__") == "PartitionKeyRange":
                return {**value, **{k: ends[k] for k in ("start", "end") if value.get(k) in wanted}}
            return {k: tags.get(k, narrow(v)) if isinstance(v, str) else narrow(v) for k, v in value.items()}
        if isinstance(value, list):
            return [narrow(v) for v in value]
        return value

    connect = getattr(instance.run_storage, "connect", None)
    if connect is None:
        return
    with connect() as conn:
        body = conn.execute(RunsTable.select().with_only_columns(RunsTable.c.run_body)
                            .where(RunsTable.c.run_id == run.run_id)).scalar_one()
        conn.execute(RunsTable.update().where(RunsTable.c.run_id == run.run_id)
                     .values(run_body=json.dumps(narrow(json.loads(body)))))


def _is_wanted(partition: str | None, wanted: set[str]) -> bool:
    # A multi-partition key is "day|tenant" (dimensions in name order).
    return partition is not None and (partition in wanted or partition.rsplit("|", 1)[-1] in wanted)


def _delete_compute_logs(instance, run_id: str) -> bool:
    """Delete a run's captured step output (every compute log manager can delete by prefix);
    True when there was some (known for a local folder; assumed for object storage)."""
    import os

    manager = instance.compute_log_manager
    base = compute_log_directory(manager)
    existed = os.path.isdir(os.path.join(base, run_id)) if base is not None else True
    try:
        manager.delete_logs(prefix=[run_id])
    except NotImplementedError:
        log.warning("compute log manager %s cannot delete; logs of run %s left", type(manager).__name__, run_id)
        return False
    return existed


def _strip_text(value):
    """The serialized event with every text metadata value replaced by a note."""
    if isinstance(value, dict):
        if value.get("__class__") in _TEXT_METADATA:
            return {"__class__": "TextMetadataEntryData", "text": REMOVED}
        return {k: _strip_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_strip_text(v) for v in value]
    return value


def _split_shared_runs(instance, run_ids: set[str], wanted: set[str]) -> tuple[int, int]:
    storage = instance.event_log_storage
    if not isinstance(storage, SqlEventLogStorage):
        log.warning("event log storage %s: shared runs not split", type(storage).__name__)
        return 0, 0
    table = SqlEventLogStorageTable
    deleted = rewritten = 0
    for run_id in sorted(run_ids):
        # SQLite keeps a run's events in its own file and mirrors asset events in the index;
        # PostgreSQL has one database: the second pass then finds nothing left to change.
        for connect in (lambda: storage.run_connection(run_id), storage.index_connection):
            with connect() as conn:
                rows = conn.execute(
                    table.select().with_only_columns(table.c.id, table.c.event, table.c.partition)
                    .where(table.c.run_id == run_id)
                ).fetchall()
                gone, changed = [], []
                for row_id, event, partition in rows:
                    if _is_wanted(partition, wanted) or (
                        '"dagster_event": null' in event and any(key in event for key in wanted)
                    ) or _evaluates_partition(event, wanted):
                        gone.append(row_id)
                        continue
                    stripped = json.dumps(_strip_text(json.loads(event)))
                    if stripped != event and any(c in event for c in _TEXT_METADATA):
                        changed.append((row_id, stripped))
                    elif '"partitions_subset"' in event and any(key in event for key in wanted):
                        # A check planned for every partition of the run: the others stay listed.
                        changed.append((row_id, json.dumps(_drop_partitions(json.loads(event), wanted))))
                if gone:
                    conn.execute(table.delete().where(table.c.id.in_(gone)))
                    if storage.has_table(AssetEventTagsTable.name):
                        conn.execute(AssetEventTagsTable.delete().where(AssetEventTagsTable.c.event_id.in_(gone)))

                for row_id, stripped in changed:
                    conn.execute(table.update().where(table.c.id == row_id).values(event=stripped))
                deleted += len(gone)
                rewritten += len(changed)
        if storage.has_table(AssetCheckExecutionsTable.name):
            with storage.index_connection() as conn:
                deleted += _split_check_executions(conn, run_id, wanted)
    return deleted, rewritten


def _delete_check_executions(instance, run_ids: set[str]) -> None:
    """Deleting a run leaves its asset check results, which name their partition (the tenant)."""
    checks = AssetCheckExecutionsTable
    storage = instance.event_log_storage
    if run_ids and isinstance(storage, SqlEventLogStorage) and storage.has_table(checks.name):
        with storage.index_connection() as conn:
            conn.execute(checks.delete().where(checks.c.run_id.in_(sorted(run_ids))))


def _drop_partitions(value, wanted: set[str]):
    """The serialized event with the wanted keys removed from every partition subset it lists."""
    if isinstance(value, dict):
        if value.get("__class__") == "DefaultPartitionsSubset" and isinstance(value.get("subset"), dict):
            keys = value["subset"].get("__set__", [])
            return {**value, "subset": {"__set__": [k for k in keys if not _is_wanted(k, wanted)]}}
        return {k: _drop_partitions(v, wanted) for k, v in value.items()}
    if isinstance(value, list):
        return [_drop_partitions(v, wanted) for v in value]
    return value


def _evaluates_partition(event: str, wanted: set[str]) -> bool:
    """A check evaluation of one of the tenants' partitions: its row has no partition column, the
    partition is in the event (a run over several tenants reports each tenant's checks)."""
    return '"ASSET_CHECK_EVALUATION"' in event and any(f'"partition": {json.dumps(key)}' in event for key in wanted)


def _split_check_executions(conn, run_id: str, wanted: set[str]) -> int:
    """Asset check results of a shared run: the forgotten tenants' go, the others lose the text
    the run's checks report for every tenant (a JSON of details by tenant)."""
    checks = AssetCheckExecutionsTable
    rows = conn.execute(
        checks.select().with_only_columns(checks.c.id, checks.c.partition, checks.c.evaluation_event)
        .where(checks.c.run_id == run_id)
    ).fetchall()
    gone = [row_id for row_id, partition, _ in rows if _is_wanted(partition, wanted)]
    if gone:
        conn.execute(checks.delete().where(checks.c.id.in_(gone)))
    for row_id, partition, event in rows:
        if row_id not in gone and event and any(c in event for c in _TEXT_METADATA):
            stripped = json.dumps(_strip_text(json.loads(event)))
            conn.execute(checks.update().where(checks.c.id == row_id).values(evaluation_event=stripped))
    return len(gone)


def _clear_cached_materializations(instance, run_ids: set[str], kept: set[str]) -> None:
    """Deleting a run (or its records) leaves a copy of its last materialization (metadata
    previews included) in the asset index of the event log storage; clear it and the partition
    status cache so Dagster reads both again from the events that remain. SQLite storage is
    vacuumed so the freed pages do not keep the bytes."""
    if not run_ids:
        return
    storage = instance.event_log_storage
    if not isinstance(storage, SqlEventLogStorage):
        log.warning("event log storage %s: cached materializations not cleared", type(storage).__name__)
        return
    with storage.index_connection() as conn:
        conn.execute(
            AssetKeyTable.update()
            .where(AssetKeyTable.c.last_run_id.in_(sorted(run_ids)))
            .values(last_materialization=None, cached_status_data=None)
        )
    _vacuum(instance, storage, kept)


def _vacuum(instance, storage, run_ids: set[str]) -> None:
    """VACUUM the SQLite files: runs (tags, partitions), the event index and the kept runs' own
    event files (a deleted run's is gone)."""
    import sqlalchemy

    urls = set()
    with storage.index_connection() as conn:
        urls.add(conn.engine.url)
    connect = getattr(instance.run_storage, "connect", None)
    if connect is not None:
        with connect() as conn:
            urls.add(conn.engine.url)
    for run_id in run_ids:
        with storage.run_connection(run_id) as conn:
            urls.add(conn.engine.url)
    for url in urls:
        if url.get_backend_name() != "sqlite":
            continue
        engine = sqlalchemy.create_engine(url)
        with engine.connect() as vacuum:
            vacuum.exec_driver_sql("VACUUM")
        engine.dispose()
