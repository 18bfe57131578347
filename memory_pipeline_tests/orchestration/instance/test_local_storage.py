"""Proves: the local instance's storage (``LocalSqliteStorage``) stores a run's events as Dagster's
own SQLite storage does, writes the events Dagster hands it together in one batch and each other
event in one transaction per file, makes a run's file as Dagster's own does, loses or duplicates
nothing when a batch fails, and stores a run's events again after a wipe of the event log, though
it keeps an engine and a connection per file; a kept connection neither hides another process's
writes nor blocks them, and a forked child writes through connections of its own.

Each test runs the same range of partitions on a stock SQLite instance and on the local storage
and compares what the instance answers afterwards: events of the run, planned and done
materializations per partition, the tags indexed for them, the asset's record, check evaluations.
"""

import os
import sqlite3
from collections import Counter

import dagster as dg
import pytest
import sqlalchemy
import yaml
from dagster._core.events.log import EventLogEntry
from dagster._core.instance.ref import InstanceRef
from dagster._core.definitions.data_version import DATA_VERSION_TAG

from memory_pipeline.orchestration.instance.sqlite import BatchingSqliteEventLogStorage, storage_config
from memory_pipeline.orchestration.runs import local_instance, range_tags

DAYS = dg.DailyPartitionsDefinition(start_date="2026-01-01")
FIRST, LAST, UNCHECKED = "2026-01-03", "2026-01-09", "2026-01-05"
RANGE = [key for key in DAYS.get_partition_keys() if FIRST <= key <= LAST]
TABLES = ("asset_event_tags", "asset_check_executions", "no_such_table")


@dg.asset(
    partitions_def=DAYS, backfill_policy=dg.BackfillPolicy.single_run(),
    check_specs=[dg.AssetCheckSpec("has_rows", asset="daily", partitions_def=DAYS)],
)
def daily(context: dg.AssetExecutionContext):
    yield dg.MaterializeResult(
        metadata={"partitions": len(context.partition_keys)},
        check_results=[dg.AssetCheckResult(check_name="has_rows", passed=True)],
    )
    for key in context.partition_keys:
        yield dg.AssetMaterialization(asset_key="daily", partition=key, metadata={"day": key})
        if key != UNCHECKED:  # its planned evaluation stays planned
            yield dg.AssetCheckEvaluation(asset_key=dg.AssetKey("daily"), check_name="has_rows", passed=key != LAST, partition=key)


@dg.asset(partitions_def=DAYS, deps=[daily], backfill_policy=dg.BackfillPolicy.single_run())
def downstream(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    return dg.MaterializeResult(metadata={"partitions": len(context.partition_keys)})


JOB = dg.define_asset_job("days_job", selection=[daily, downstream], partitions_def=DAYS)
DEFS = dg.Definitions(assets=[daily, downstream], jobs=[JOB])


def run_range(instance: dg.DagsterInstance) -> str:
    result = DEFS.resolve_job_def("days_job").execute_in_process(instance=instance, tags=range_tags(FIRST, LAST))
    assert result.success
    return result.run_id


def what_the_instance_answers(instance: dg.DagsterInstance, run_id: str) -> dict:
    def partitions(event_type: dg.DagsterEventType, asset: str) -> list[str]:
        records = instance.get_event_records(dg.EventRecordsFilter(event_type, asset_key=dg.AssetKey(asset)), limit=1000)
        return sorted(r.partition_key for r in records)

    def figures(asset: str) -> list[tuple[str, str]]:
        records = instance.fetch_materializations(dg.AssetKey(asset), limit=1000).records
        return sorted((r.partition_key, repr(sorted(r.asset_materialization.metadata.items()))) for r in records)

    def tagged(asset: str) -> list[str]:  # the partitions whose latest materialization's tags are indexed
        by_partition = instance.event_log_storage.get_latest_tags_by_partition(
            dg.AssetKey(asset), dg.DagsterEventType.ASSET_MATERIALIZATION, tag_keys=[DATA_VERSION_TAG]
        )
        return sorted(p for p, tags in by_partition.items() if DATA_VERSION_TAG in tags)

    answers = {"events": Counter(e.dagster_event_type for e in instance.all_logs(run_id) if e.dagster_event_type)}
    for asset in ("daily", "downstream"):
        key = dg.AssetKey(asset)
        record = instance.get_asset_records([key])[0].asset_entry
        answers[asset] = {
            "materialized": sorted(instance.get_materialized_partitions(key)),
            "planned": partitions(dg.DagsterEventType.ASSET_MATERIALIZATION_PLANNED, asset),
            "done": partitions(dg.DagsterEventType.ASSET_MATERIALIZATION, asset),
            "last_run": record.last_run_id == run_id,
            "last_partition": record.last_materialization_record.partition_key,
            "figures": figures(asset),
            "tagged": tagged(asset),
        }
    checks = instance.event_log_storage.get_asset_check_execution_history(
        dg.AssetCheckKey(dg.AssetKey("daily"), "has_rows"), limit=100
    )
    answers["checks"] = sorted((c.partition or "", c.status.value) for c in checks)
    answers["planned_check"] = [  # the planned evaluation as stored, for the partition never evaluated
        (c.event.dagster_event.event_specific_data.check_name, c.run_id == run_id) for c in checks if c.partition == UNCHECKED
    ]
    return answers


def log_line(run_id: str, message: str) -> EventLogEntry:
    """A plain log line of the run (no Dagster event)."""
    return EventLogEntry(error_info=None, level="INFO", user_message=message, run_id=run_id, timestamp=0.0)


@pytest.fixture
def local_storage(tmp_path):
    home = tmp_path / "local"
    home.mkdir()
    with dg.instance_for_test(temp_dir=str(home), overrides={"storage": storage_config(str(home))}) as instance:
        assert type(instance.event_log_storage) is BatchingSqliteEventLogStorage
        yield instance


def test_local_storage_answers_as_dagsters_own_and_writes_batches(tmp_path, local_storage, monkeypatch):
    batches: list[tuple[str, int]] = []
    store = BatchingSqliteEventLogStorage._store_asset_events

    def recorded(self, events):
        batches.append((events[0].dagster_event_type.value, len(events)))
        return store(self, events)

    monkeypatch.setattr(BatchingSqliteEventLogStorage, "_store_asset_events", recorded)
    (tmp_path / "stock").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "stock")) as stock:
        assert type(stock.event_log_storage).__name__ == "SqliteEventLogStorage"
        expected = what_the_instance_answers(stock, run_range(stock))
        expected["tables"] = [stock.event_log_storage.has_table(t) for t in TABLES]
    answers = what_the_instance_answers(local_storage, run_range(local_storage))
    answers["tables"] = [local_storage.event_log_storage.has_table(t) for t in TABLES]

    assert answers == expected
    assert expected["tables"] == [True, True, False]
    assert expected["daily"]["planned"] == RANGE and expected["daily"]["done"] == sorted(RANGE * 2)
    assert expected["daily"]["materialized"] == RANGE and expected["downstream"]["last_run"]
    assert expected["downstream"]["tagged"] == RANGE  # daily's latest are its own, without data versions
    assert {(LAST, "FAILED"), (FIRST, "SUCCEEDED"), (UNCHECKED, "PLANNED")} <= set(expected["checks"])
    # The planned materializations of both assets came as one batch, each step's 7 as another.
    assert ("ASSET_MATERIALIZATION_PLANNED", 2 * len(RANGE)) in batches, batches
    assert batches.count(("ASSET_MATERIALIZATION", len(RANGE))) == 2, batches


def test_a_check_evaluation_is_stored_through_one_connection_per_file(local_storage, monkeypatch):
    opened: list[tuple[str, str]] = []
    transaction = BatchingSqliteEventLogStorage._transaction
    store_event = BatchingSqliteEventLogStorage.store_event

    def recorded_transaction(self, shard):
        opened.append((self._current_event, "index" if shard == "index" else "run"))
        return transaction(self, shard)

    def recorded_store(self, event):
        self._current_event = event.dagster_event_type.value if event.dagster_event_type else "log"
        return store_event(self, event)

    monkeypatch.setattr(BatchingSqliteEventLogStorage, "_transaction", recorded_transaction)
    monkeypatch.setattr(BatchingSqliteEventLogStorage, "store_event", recorded_store)
    run_range(local_storage)
    evaluations = len(RANGE)  # one per checked partition (all days but one), and the run's own result
    per_evaluation = Counter(where for event, where in opened if event == "ASSET_CHECK_EVALUATION")
    # The stock storage opens the index file twice for each (the row, then the check's record).
    assert per_evaluation == {"run": evaluations, "index": evaluations}, per_evaluation


def test_a_run_file_is_made_as_dagsters_own_makes_it(tmp_path, local_storage):
    def made(instance: dg.DagsterInstance) -> tuple:
        run_id = run_range(instance)
        db = sqlite3.connect(instance.event_log_storage.path_for_shard(run_id))
        try:
            return (
                sorted(db.execute("SELECT type, name, sql FROM sqlite_master").fetchall()),
                db.execute("SELECT version_num FROM alembic_version").fetchall(),
                db.execute("PRAGMA journal_mode").fetchall(),
            )
        finally:
            db.close()

    (tmp_path / "stock").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "stock")) as stock:
        expected = made(stock)
    assert made(local_storage) == expected
    assert expected[2] == [("wal",)] and len(expected[1]) == 1 and expected[0]


def test_a_failed_batch_is_rolled_back_and_stored_one_event_at_a_time(local_storage, monkeypatch, capfd):
    failures: list[int] = []
    store_tags = BatchingSqliteEventLogStorage._store_asset_event_tags

    def fail_in_a_batch(self, conn, events, event_ids):
        if len(events) > 1:  # after the batch's rows were inserted in both files
            failures.append(len(events))
            raise RuntimeError("disk full")
        return store_tags(self, conn, events, event_ids)

    monkeypatch.setattr(BatchingSqliteEventLogStorage, "_store_asset_event_tags", fail_in_a_batch)
    run_id = run_range(local_storage)
    answers = what_the_instance_answers(local_storage, run_id)

    assert failures, "no batch was written"
    assert "Exception while storing event batch: disk full" in capfd.readouterr().err
    # Every event once: the rolled-back batch left nothing behind, the single writes stored it all.
    assert answers["daily"]["planned"] == RANGE and answers["downstream"]["planned"] == RANGE
    assert answers["daily"]["done"] == sorted(RANGE * 2) and answers["daily"]["materialized"] == RANGE
    assert answers["events"][dg.DagsterEventType.ASSET_MATERIALIZATION_PLANNED] == 2 * len(RANGE)


def test_a_wiped_event_log_stores_a_runs_events_again_as_dagsters_own_does(tmp_path, local_storage):
    def after_wipe(instance: dg.DagsterInstance) -> list[str]:
        run_id = run_range(instance)
        instance.event_log_storage.wipe()  # removes every run's file, whose engine the local storage keeps
        instance.event_log_storage.store_event(log_line(run_id, "after the wipe"))
        return [entry.user_message for entry in instance.all_logs(run_id)]

    (tmp_path / "stock").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "stock")) as stock:
        expected = after_wipe(stock)
    assert after_wipe(local_storage) == expected == ["after the wipe"]


def test_the_local_home_and_its_run_workers_use_the_local_storage(tmp_path, monkeypatch):
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    home = tmp_path / "home"
    instance = local_instance(home)
    config = yaml.safe_load((home / "dagster.yaml").read_text())
    assert config["storage"]["custom"]["class"] == "LocalSqliteStorage"
    assert config["storage"]["custom"]["config"] == {"base_dir": str(home)}
    assert type(instance.event_log_storage) is BatchingSqliteEventLogStorage
    run_id = run_range(instance)
    # Dagster's own layout under the home: a stock instance on the same folder reads the run.
    assert (home / "history" / "runs" / f"{run_id}.db").is_file()
    (tmp_path / "elsewhere").mkdir()
    stock_ref = InstanceRef.from_dir(str(tmp_path / "elsewhere"), overrides={"storage": {"sqlite": {"base_dir": str(home)}}})
    with dg.DagsterInstance.from_ref(stock_ref) as stock:
        assert sorted(stock.get_materialized_partitions(dg.AssetKey("downstream"))) == RANGE
    # A run worker rebuilds the instance from its reference.
    with dg.DagsterInstance.from_ref(instance.get_ref()) as worker:
        assert type(worker.event_log_storage) is BatchingSqliteEventLogStorage
    instance.dispose()


def test_a_kept_connection_neither_hides_nor_blocks_another_writer(local_storage):
    run_id = run_range(local_storage)
    mine = local_storage.event_log_storage
    mine.store_event(log_line(run_id, "first"))  # the run's file and the index now have an idle connection
    # Another process's storage on the same files (as a run worker or the webserver builds it).
    other = BatchingSqliteEventLogStorage(mine._base_dir)
    try:
        other.store_event(log_line(run_id, "from the other writer"))
        mine.store_event(log_line(run_id, "second"))
        expected = ["first", "from the other writer", "second"]
        for storage in (mine, other):
            assert [e.user_message for e in storage.get_logs_for_run(run_id) if not e.is_dagster_event] == expected
    finally:
        other.dispose()


def test_a_forked_child_writes_through_connections_of_its_own(local_storage):
    run_id = run_range(local_storage)
    storage = local_storage.event_log_storage
    storage.store_event(log_line(run_id, "parent, before"))  # the run's file has an idle connection
    opened: list[int] = []
    sqlalchemy.event.listen(storage._engine(run_id), "connect", lambda conn, record: opened.append(os.getpid()))
    child = os.fork()
    if child == 0:  # the child: exit status 0 only if its write went through a connection it opened
        try:
            storage.store_event(log_line(run_id, "child"))
            os._exit(0 if opened == [os.getpid()] else 2)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    storage.store_event(log_line(run_id, "parent, after"))
    messages = [e.user_message for e in storage.get_logs_for_run(run_id) if not e.is_dagster_event]
    assert messages == ["parent, before", "child", "parent, after"]
