"""The one place that reaches past Dagster's public API, and why.

Every other module imports only ``dagster``, public Dagster packages and this module. Each
workaround below names what the public API lacks; ``memory_pipeline_tests/orchestration/
test_dagster_adapter.py`` fails when a release moves or changes anything used here.

**Check evaluations per partition.** Dagster links a check evaluation to the materialization it
checked: a partition's check status in the UI (Checks -> Partitions) counts an evaluation only
while it targets that partition's latest materialization. ``AssetCheckResult`` does the linking
itself, but only in a run of one partition; in a run over several partitions (a single-run
backfill) it records no partition at all. The pipeline therefore yields one public
``dg.AssetCheckEvaluation`` per partition, and the class that names the target materialization,
``AssetCheckEvaluationTargetMaterializationData``, is not exported by ``dagster`` (1.13): it is
imported here from its private module. Without a target, every evaluation of a multi-partition run
shows as "Missing" beside a passed history.

**Per-partition figures.** ``context.add_asset_metadata(metadata, partition_key=key)`` is public,
but each call lists every key of the run's range to check that ``key`` is one of them: 20-29 ms a
call on a consolidation range of 330 days (one tenant, 33 keys reported: 0.67-0.97 s, against
2.6 ms for the same figures added here), where consolidating one short session takes about 250 ms.
``add_partition_metadata`` adds the figures to the same accumulator the public call fills, for a key
the caller took from the run's own keys; it uses the public call when the private accumulator is not
where it was.

**The local SQLite storage** (``instance/sqlite.py``). Dagster's SQLite storages are not exported
and offer no extension points: the event log builds an engine per statement (``_connect``), reads
the migration scripts for every new file (``_initdb``), and writes a planned check's rows through
``_store_asset_check_evaluation_planned``. ``SqliteEventLogStorageBase`` routes those three private
hooks to public-named methods a subclass overrides, and names the private helpers a batch write
reuses (the event's row, the asset's record, the insert timestamp, the lock and the set of
initialized files). ``replace_event_log_storage`` swaps the event log ``DagsterSqliteStorage``
builds (it has no parameter for one); ``event_logs_directory`` is where it keeps the event files.
The schema tables (``SqlEventLogStorageTable``, ``AssetCheckExecutionsTable``, ``RunsTable``, ...),
the index file's name, the busy timeout, the migration config and ``ConfigurableClassData`` (the
type of a ``dagster.yaml`` class entry) have no public home either.

**Kept PostgreSQL connections** (``instance/postgres.py``). dagster-postgres' storages connect
anew for every statement; their only switch, ``optimize_for_webserver``, builds a pool without a
pre-ping. ``replace_engine`` swaps the private ``_engine`` for a pooled, pinged one.

**Run workers** (``instance/run_workers.py``). A custom run launcher reaches its instance through
the private ``_instance`` (``run_launcher_instance``), and reports health with
``CheckRunHealthResult`` and ``WorkerStatus``, which ``dagster`` does not export; nor does it
export ``IN_PROGRESS_RUN_STATUSES`` or ``SqliteRunStorage`` (to know the runs are on this machine).

**Forgetting tenants** (``instance/forget_runs.py``). No public API deletes single event records
or rewrites a run's partition range: the forget works on the schema tables above through
``SqlEventLogStorage`` (not exported), and reads a local compute log manager's folder from its
private ``_base_dir`` (``compute_log_directory``).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

import dagster as dg
from alembic.config import Config
from dagster._core.definitions.asset_checks.asset_check_evaluation import AssetCheckEvaluationTargetMaterializationData
from dagster._core.launcher import CheckRunHealthResult, WorkerStatus
from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus
from dagster._core.storage.dagster_run import IN_PROGRESS_RUN_STATUSES
from dagster._core.storage.event_log.schema import (
    AssetCheckExecutionsTable, AssetEventTagsTable, AssetKeyTable, SqlEventLogStorageMetadata, SqlEventLogStorageTable,
)
from dagster._core.storage.event_log.sql_event_log import SqlEventLogStorage
from dagster._core.storage.event_log.sqlite import sqlite_event_log
from dagster._core.storage.event_log.sqlite.sqlite_event_log import INDEX_SHARD_NAME, SqliteEventLogStorage
from dagster._core.storage.runs.schema import RunsTable
from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage
from dagster._core.storage.sql import get_alembic_config
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS
from dagster._core.storage.sqlite_storage import DagsterSqliteStorage, _event_logs_directory
from dagster._serdes import ConfigurableClassData
from sqlalchemy.engine import Connection, Engine

__all__ = [
    "INDEX_SHARD_NAME", "IN_PROGRESS_RUN_STATUSES", "SQLITE_BUSY_TIMEOUT_SECONDS",
    "AssetCheckEvaluationTargetMaterializationData", "AssetCheckExecutionRecordStatus", "AssetCheckExecutionsTable",
    "AssetEventTagsTable", "AssetKeyTable", "CheckRunHealthResult", "ConfigurableClassData", "DagsterSqliteStorage",
    "RunsTable", "SqlEventLogStorage", "SqlEventLogStorageMetadata", "SqlEventLogStorageTable",
    "SqliteEventLogStorageBase", "SqliteRunStorage", "WorkerStatus",
    "add_partition_metadata", "compute_log_directory", "event_logs_directory", "latest_materialization_targets",
    "replace_engine", "replace_event_log_storage", "run_launcher_instance", "sqlite_event_log_alembic_config",
]


def add_partition_metadata(
    context: dg.AssetExecutionContext, key: str, metadata: dict, asset_key: dg.AssetKey | None = None
) -> None:
    """``context.add_asset_metadata(metadata, partition_key=key, asset_key=asset_key)`` for a ``key``
    of the run, without listing the run's keys again (see the module docstring)."""
    asset_key = asset_key or context.asset_key
    step = getattr(context.op_execution_context, "_step_execution_context", None)
    accumulator = getattr(step, "_metadata_accumulator", None)
    if accumulator is None:
        context.add_asset_metadata(metadata, partition_key=key, asset_key=asset_key)
        return
    step._metadata_accumulator = accumulator.with_additional_asset_metadata(asset_key, key, metadata)


def latest_materialization_targets(
    instance: dg.DagsterInstance, asset_key: dg.AssetKey, partition_keys: Sequence[str]
) -> dict[str, AssetCheckEvaluationTargetMaterializationData]:
    """{partition: its latest materialization, as a check evaluation's target} for the partitions
    that have one. Read newest first, a page at a time, until every partition is found: in a run
    that just materialized them, the first page of ``len(partition_keys)`` records."""
    wanted = set(partition_keys)
    found: dict[str, AssetCheckEvaluationTargetMaterializationData] = {}
    cursor = None
    while wanted - found.keys():
        page = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=asset_key, asset_partitions=sorted(wanted - found.keys())),
            limit=max(len(wanted) - len(found), 1), cursor=cursor,
        )
        for record in page.records:
            if record.partition_key in wanted and record.partition_key not in found:
                found[record.partition_key] = AssetCheckEvaluationTargetMaterializationData(
                    run_id=record.run_id, storage_id=record.storage_id, timestamp=record.timestamp
                )
        if not page.has_more:
            break
        cursor = page.cursor
    return found


class SqliteEventLogStorageBase(SqliteEventLogStorage):
    """Dagster's SQLite event log with its private hooks under public names: a subclass overrides
    ``init_database``, ``shard_connection`` and ``store_planned_check_evaluation`` (each defaults to
    the stock behaviour) and calls the named helpers below instead of private ones."""

    def _initdb(self, engine: Engine, for_index_shard: bool = False) -> None:
        self.init_database(engine, for_index_shard)

    def init_database(self, engine: Engine, for_index_shard: bool = False) -> None:
        """Make a database file's tables if it has none (the stock ``_initdb``, which retries when
        another process makes the same file)."""
        SqliteEventLogStorage._initdb(self, engine, for_index_shard)

    def _connect(self, shard: str) -> AbstractContextManager[Connection]:
        return self.shard_connection(shard)

    def shard_connection(self, shard: str) -> AbstractContextManager[Connection]:
        """A connection to one database file (a run's, or the index) in an open transaction, the
        file made first if this process has not seen it (the stock ``_connect``: a new engine)."""
        return SqliteEventLogStorage._connect(self, shard)

    def _store_asset_check_evaluation_planned(self, event: dg.EventLogEntry, event_id: int | None) -> None:
        self.store_planned_check_evaluation(event, event_id)

    def store_planned_check_evaluation(self, event: dg.EventLogEntry, event_id: int | None) -> None:
        """The rows of a planned check evaluation in the check executions table."""
        SqliteEventLogStorage._store_asset_check_evaluation_planned(self, event, event_id)

    @property
    def initialized_shards(self) -> set[str]:
        """The database files this process has made or found made (a wipe empties the set)."""
        return self._initialized_dbs

    @property
    def database_lock(self) -> Any:
        """The lock the stock storage holds around every connection of this process."""
        return self._db_lock

    def event_row(self, event: dg.EventLogEntry) -> dict[str, Any]:
        """The event's row in ``SqlEventLogStorageTable``, the event serialized."""
        return self._event_to_row(event)

    def store_asset_record(self, conn: Connection, event: dg.EventLogEntry, event_id: int) -> None:
        """Write the asset's record (its last materialization, observation or planned one) from the
        stored event ``event_id``."""
        self._store_asset_event(conn, event, event_id)

    def event_insert_timestamp(self, event: dg.EventLogEntry) -> Any:
        """The event's time as the event log's tables store it."""
        return self._event_insert_timestamp(event)


def sqlite_event_log_alembic_config() -> Config:
    """The alembic config of Dagster's migration scripts for its SQLite event log, as its init reads it."""
    return get_alembic_config(sqlite_event_log.__file__)


def event_logs_directory(base_dir: str) -> str:
    """Where ``DagsterSqliteStorage`` under ``base_dir`` keeps its event log's files."""
    return _event_logs_directory(base_dir)


def replace_event_log_storage(storage: DagsterSqliteStorage, event_log: SqliteEventLogStorage) -> None:
    """Make ``event_log`` the event log ``storage`` hands out, in place of the one it built (which
    is disposed of: it is open on the same files)."""
    storage._event_log_storage.dispose()
    storage._event_log_storage = event_log


def replace_engine(part: Any, engine: Engine) -> None:
    """Make ``engine`` the one a dagster-postgres storage (runs, events or schedules) connects
    through, the engine it built disposed of."""
    part._engine.dispose()
    part._engine = engine


def run_launcher_instance(launcher: dg.DefaultRunLauncher) -> dg.DagsterInstance:
    """The instance a run launcher was registered with."""
    return launcher._instance


def compute_log_directory(manager: Any) -> str | None:
    """The folder a local compute log manager writes under (``None`` for a manager that keeps its
    logs elsewhere, such as object storage)."""
    return getattr(manager, "_base_dir", None)
