"""The local instance's storage: Dagster's SQLite storage, writing each batch of events at once.

``local_instance`` (the CLI's and the demo's home, ``.dagster_home``) names ``LocalSqliteStorage``
in the ``dagster.yaml`` it writes. Runs, events and schedules are the files of Dagster's own
SQLite storage under ``base_dir`` (a stock instance reads them), written by the stock code except
in these ways:

- **One engine per database file, its connection kept.** Dagster's SQLite event log builds a
  SQLAlchemy engine for every statement, so no compiled statement is ever reused (the
  consolidation of the LoCoMo dev sessions compiled 18,000), and another to ask whether the index
  holds a table, twice for each asset event; each engine opens a new connection per write and
  closes it after (which, in WAL mode, checkpoints the file when it was the last one open). Here
  each file keeps its engine and the engine its connection between writes, and a table found is
  remembered. An idle connection holds no transaction and so no lock: other processes read and
  write the same files as before. A wipe, which deletes the runs' files, closes their connections
  first, and a forked child drops its parent's connections without closing them.
- **Batches in one transaction.** With ``DAGSTER_EVENT_BATCH_SIZE`` set (this storage sets it for
  the process that builds it), Dagster hands a storage the events it produces together as one
  batch: the planned materializations of every partition of a run, the materializations of
  every partition a step wrote. The stock event log stores them one by one, each in its own
  transactions on the run's file and on the index file, serializing the asset's record anew for
  each. Here a batch is one transaction per file: each event serialized once and inserted in
  both files, its tags indexed, and the asset's record written once with the batch's last event,
  which is what the record holds after the stock writes too. Other events of a batch (planned
  check evaluations) go through the stock ``store_event`` in the same transactions. On an error
  everything is rolled back and Dagster stores the batch's events one at a time.
- **Any other event in one transaction per file.** The stock ``store_event`` opens the index file
  twice for a check evaluation (its row, then the check's record), each time on a new connection;
  here once, and the event is stored in every file or in none.
- **A planned check evaluation serialized once.** Its rows, one per partition of the run, hold the
  same serialized event; the stock event log serializes it again for each row.
- **A new run's file made with the migration scripts read once.** The stock init reads all of
  Dagster's migration scripts twice for every run's new file, to stamp it with their head.

Every partition of a run costs a planned and a done materialization per asset (and a check
evaluation per check): how long the consolidation runs of the 70 LoCoMo dev sessions take against
the stock storage is in ``bench/README.md`` (``bench/consolidate.py``).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from functools import cache
from itertools import groupby
from weakref import WeakSet

import dagster as dg
import sqlalchemy
import yaml
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DatabaseError
from sqlalchemy.pool import QueuePool

from memory_pipeline.orchestration.dagster_adapter import (
    INDEX_SHARD_NAME, SQLITE_BUSY_TIMEOUT_SECONDS, AssetCheckExecutionRecordStatus, AssetCheckExecutionsTable,
    ConfigurableClassData, DagsterSqliteStorage, SqlEventLogStorageMetadata, SqlEventLogStorageTable,
    SqliteEventLogStorageBase, event_logs_directory, replace_event_log_storage, sqlite_event_log_alembic_config,
)

BATCH_SIZE_VARIABLE = "DAGSTER_EVENT_BATCH_SIZE"
BATCH_SIZE = 1000
"""Events Dagster collects before handing them over (a run over a year of days plans 365
materializations per asset, written as one batch)."""
PLAIN_ASSET_EVENTS = {
    dg.DagsterEventType.ASSET_MATERIALIZATION, dg.DagsterEventType.ASSET_OBSERVATION,
    dg.DagsterEventType.ASSET_MATERIALIZATION_PLANNED,
}
"""The events a batch stores at once (``_store_asset_events``); any other goes through ``store_event``."""
ENGINES_KEPT = 16
"""Database files whose engine a process keeps: the index and the runs it is writing or reading
(each engine holds its compiled statements and one idle connection, an open file)."""


class BatchingSqliteEventLogStorage(SqliteEventLogStorageBase):
    """Dagster's SQLite event log with one engine per file and batches written in one transaction."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None):
        self._engines: OrderedDict[str, Engine] = OrderedDict()
        self._batch = threading.local()
        self._tables: set[str] = set()
        super().__init__(base_dir, inst_data)
        _STORAGES.add(self)

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData | None, config_value: dict) -> BatchingSqliteEventLogStorage:
        return cls(inst_data=inst_data, **config_value)

    def has_table(self, table_name: str) -> bool:
        """Whether the index file holds the table, asked on its kept engine (the stock check builds
        an engine for each call, and asks twice for each asset event). A table found stays found:
        Dagster's migrations add tables, never drop them."""
        if table_name not in self._tables:
            with self._engine(INDEX_SHARD_NAME).connect() as conn:
                if conn.dialect.has_table(conn, table_name):
                    self._tables.add(table_name)
        return table_name in self._tables

    def init_database(self, engine: Engine, for_index_shard: bool = False) -> None:
        """A new file made as the stock init makes it (Dagster's tables, WAL, the migrations' head
        stamped), with Dagster's migration scripts read once per process: the stock init reads all
        of them twice for every new run's file (70-90 ms here). A file that has a revision is left
        as it is, as the stock init leaves it. The index file, or any database error (another
        process making the same file), goes the stock way, which retries."""
        if not for_index_shard:
            try:
                with engine.connect() as conn:
                    context = MigrationContext.configure(conn)
                    if context.get_current_revision() is None:
                        SqlEventLogStorageMetadata.create_all(engine)
                        conn.execute(text("PRAGMA journal_mode=WAL;"))
                        context.stamp(_migration_scripts(), "head")
                        conn.commit()
                return
            except (DatabaseError, sqlite3.DatabaseError):
                pass
        super().init_database(engine, for_index_shard)

    def _engine(self, shard: str) -> Engine:
        engine = self._engines.pop(shard, None)
        if engine is None:
            engine = sqlalchemy.create_engine(
                self.conn_string_for_shard(shard), poolclass=QueuePool, pool_size=1, max_overflow=-1,
                connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS},
            )
        if shard not in self.initialized_shards:  # asked at each use, as the stock one does: a wipe empties it
            self.init_database(engine)
            self.initialized_shards.add(shard)
        self._engines[shard] = engine  # the most recently used last
        while len(self._engines) > ENGINES_KEPT:
            self._engines.popitem(last=False)[1].dispose()
        return engine

    @contextmanager
    def shard_connection(self, shard: str) -> Iterator[Connection]:
        held: dict[str, Connection] | None = getattr(self._batch, "connections", None)
        if held is not None:  # inside store_event_batch, on its thread: its open transaction
            if shard not in held:
                held[shard] = self._batch.stack.enter_context(self._transaction(shard))
            yield held[shard]
            return
        with self.database_lock, self._transaction(shard) as conn:
            yield conn

    @contextmanager
    def _transaction(self, shard: str) -> Iterator[Connection]:
        with self._engine(shard).connect() as conn, conn.begin():
            yield conn

    @contextmanager
    def _one_transaction_per_file(self) -> Iterator[None]:
        """Every write of the block, on this thread, through one connection and transaction per
        database file, committed together at its end (or rolled back together)."""
        if getattr(self._batch, "connections", None) is not None:
            yield  # inside another such block: its transactions
            return
        with self.database_lock, ExitStack() as stack:
            self._batch.connections, self._batch.stack = {}, stack
            try:
                yield
            finally:
                self._batch.connections = self._batch.stack = None

    def store_event(self, event: dg.EventLogEntry) -> None:
        """The stock ``store_event`` in one transaction per file: it opens the index file twice
        for a check evaluation (its row, then its check's record), each on a new connection."""
        with self._one_transaction_per_file():
            super().store_event(event)

    def store_event_batch(self, events: Sequence[dg.EventLogEntry]) -> None:
        with self._one_transaction_per_file():
            for (plain, _), group in groupby(events, key=lambda e: (_plain_asset_event(e), e.run_id)):
                if plain:
                    self._store_asset_events(list(group))
                else:
                    for event in group:
                        self.store_event(event)

    def _store_asset_events(self, events: list[dg.EventLogEntry]) -> None:
        """What ``store_event`` does for each of these events of one run (each a materialization,
        an observation or a planned materialization of an asset), at once: each event serialized
        once, inserted in the run's file and mirrored in the index, its tags indexed; the asset's
        record, which each of them would overwrite, written once per asset and kind of event."""
        rows = [self.event_row(event) for event in events]
        with self.run_connection(events[0].run_id) as conn:
            conn.execute(SqlEventLogStorageTable.insert(), rows)
        with self.index_connection() as conn:
            # One statement for the batch, its ids returned in the rows' order.
            insert = SqlEventLogStorageTable.insert().returning(SqlEventLogStorageTable.c.id, sort_by_parameter_order=True)
            ids = list(conn.execute(insert, rows).scalars())
            self.store_asset_event_tags(events, ids)  # on this block's index transaction
            last = {
                (event.dagster_event.asset_key, event.dagster_event_type): (event_id, event)
                for event, event_id in zip(events, ids)
            }
            for event_id, event in sorted(last.values(), key=lambda pair: pair[0]):
                self.store_asset_record(conn, event, event_id)

    def store_planned_check_evaluation(self, event: dg.EventLogEntry, event_id: int | None) -> None:
        """Dagster's rows of a planned check evaluation, one per partition of the run, with the event
        serialized once for all of them (the stock storage serializes it, the run's partitions
        included, again for each row: a consolidation range plans each check on every day)."""
        planned = event.get_dagster_event().event_specific_data
        keys = planned.partitions_subset.get_partition_keys() if planned.partitions_subset else [None]
        common = {
            "asset_key": planned.asset_key.to_string(), "check_name": planned.check_name, "run_id": event.run_id,
            "execution_status": AssetCheckExecutionRecordStatus.PLANNED.value, "evaluation_event": dg.serialize_value(event),
            "evaluation_event_timestamp": self.event_insert_timestamp(event), "evaluation_event_storage_id": event_id,
        }
        with self.index_connection() as conn:
            conn.execute(AssetCheckExecutionsTable.insert(), [{**common, "partition": key} for key in keys])

    def wipe(self) -> None:
        """The stock wipe, which deletes every run's file, with their kept connections closed first
        (a connection left open would go on writing to the deleted file)."""
        for shard in [s for s in self._engines if s != INDEX_SHARD_NAME]:
            self._engines.pop(shard).dispose()
        super().wipe()

    def dispose(self) -> None:
        super().dispose()
        while self._engines:
            self._engines.popitem()[1].dispose()

    def forget_connections(self) -> None:
        """In a forked child: the parent's connections are the parent's, dropped unclosed."""
        for engine in self._engines.values():
            engine.dispose(close=False)


_STORAGES: WeakSet[BatchingSqliteEventLogStorage] = WeakSet()
os.register_at_fork(after_in_child=lambda: [storage.forget_connections() for storage in list(_STORAGES)])


@cache
def _migration_scripts() -> ScriptDirectory:
    """Dagster's migration scripts for its SQLite event log, as its init reads them."""
    return ScriptDirectory.from_config(sqlite_event_log_alembic_config())


def _plain_asset_event(event: dg.EventLogEntry) -> bool:
    return bool(event.is_dagster_event and event.dagster_event_type in PLAIN_ASSET_EVENTS and event.dagster_event.asset_key)


class LocalSqliteStorage(DagsterSqliteStorage):
    """Dagster's SQLite storage under ``base_dir`` with ``BatchingSqliteEventLogStorage`` as its
    event log (runs and schedules are the stock ones)."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None):
        super().__init__(base_dir, inst_data)
        # In place of the stock event log the parent opened on the same files.
        replace_event_log_storage(self, BatchingSqliteEventLogStorage(event_logs_directory(base_dir)))
        write_events_in_batches()

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData | None, config_value: dict) -> LocalSqliteStorage:
        return cls.from_local(inst_data=inst_data, **config_value)

    @property
    def event_storage_data(self) -> ConfigurableClassData:
        return ConfigurableClassData(
            __name__, BatchingSqliteEventLogStorage.__name__,
            yaml.dump({"base_dir": event_logs_directory(self.base_dir)}, default_flow_style=False),
        )


def write_events_in_batches() -> None:
    """Let Dagster hand this process's storage the events it produces together as one batch
    (unless ``DAGSTER_EVENT_BATCH_SIZE`` is set already): the instance reads the variable at each
    event, and the storage is what every process building the instance (a run worker, the
    daemon, the webserver) constructs."""
    os.environ.setdefault(BATCH_SIZE_VARIABLE, str(BATCH_SIZE))


def storage_config(base_dir: str | dict) -> dict:
    """The ``storage`` section of an instance's ``dagster.yaml`` naming ``LocalSqliteStorage``."""
    return {"custom": {"module": __name__, "class": LocalSqliteStorage.__name__, "config": {"base_dir": base_dir}}}
