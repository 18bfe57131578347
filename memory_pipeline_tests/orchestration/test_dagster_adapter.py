"""Proves: every piece of Dagster's private API the pipeline relies on is still where, and what, it was.

``dagster_adapter`` is the one module that reaches past Dagster's public API (its docstring says
why, piece by piece). These tests fail loudly when a release moves or renames one of its private
imports, starts exporting one (then the adapter should use the public name), changes the signature
of a private method the adapter overrides or calls, drops a private attribute it reads or
replaces, or adds a name of its own that the adapter's hooks would shadow; and they check that
the pieces still behave as relied on: an evaluation targeting a partition's latest
materialization is that partition's current check status, per-partition figures land where the
public call puts them, the SQLite hooks are called, the replaced parts are the ones handed out.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import os
from pathlib import Path

import dagster as dg
import dagster_postgres
from alembic.script import ScriptDirectory

from memory_pipeline.orchestration import dagster_adapter
from memory_pipeline.orchestration.dagster_adapter import (
    AssetCheckEvaluationTargetMaterializationData,
    DagsterSqliteStorage,
    SqliteEventLogStorageBase,
    compute_log_directory,
    event_logs_directory,
    latest_materialization_targets,
    replace_event_log_storage,
    run_launcher_instance,
    sqlite_event_log_alembic_config,
)

PARTS = dg.StaticPartitionsDefinition(["x", "y"])


def _private_imports() -> list[tuple[str, str]]:
    """(module, name) for every ``from dagster._... import name`` of the adapter."""
    tree = ast.parse(Path(dagster_adapter.__file__).read_text(encoding="utf-8"))
    return [
        (node.module, alias.name)
        for node in tree.body if isinstance(node, ast.ImportFrom) and node.module and "._" in f".{node.module}"
        for alias in node.names
    ]


def test_every_private_import_still_resolves():
    imports = _private_imports()
    assert len(imports) > 15  # the walk found the adapter's imports
    missing = []
    for module, name in imports:
        try:
            getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            missing.append(f"{module}.{name}")
    assert missing == [], "Dagster moved these: find their new home and update dagster_adapter"


def test_nothing_imported_privately_is_public_now():
    public = {name for name in dir(dg) if not name.startswith("_")} | set(dagster_postgres.__all__)
    exported = sorted(name for _, name in _private_imports() if name in public)
    assert exported == [], "exported now: import these from dagster in dagster_adapter (or where they are used)"


def test_the_target_class_has_the_fields_used():
    target = AssetCheckEvaluationTargetMaterializationData(run_id="r", storage_id=7, timestamp=1.5)
    assert (target.run_id, target.storage_id, target.timestamp) == ("r", 7, 1.5)


STOCK_SQLITE_EVENT_LOG = SqliteEventLogStorageBase.__bases__[0]
PRIVATE_METHODS = {
    # overridden by SqliteEventLogStorageBase, which calls the stock ones
    "_initdb": ["self", "engine", "for_index_shard"],
    "_connect": ["self", "shard"],
    "_store_asset_check_evaluation_planned": ["self", "event", "event_id"],
    # called by it
    "_event_to_row": ["self", "event"],
    "_store_asset_event": ["self", "conn", "event", "event_id"],
    "_event_insert_timestamp": ["self", "event"],
    # public names of the private class that instance/sqlite.py calls
    "store_asset_event_tags": ["self", "events", "event_ids"],
    "conn_string_for_shard": ["self", "shard_name"],
    "run_connection": ["self", "run_id"],
    "index_connection": ["self"],
}


def test_the_private_methods_used_keep_their_signatures():
    found = {
        name: list(inspect.signature(getattr(STOCK_SQLITE_EVENT_LOG, name)).parameters)
        if hasattr(STOCK_SQLITE_EVENT_LOG, name) else None
        for name in PRIVATE_METHODS
    }
    assert found == PRIVATE_METHODS


def test_the_hooks_shadow_no_stock_name():
    """The names the adapter's base class adds are not Dagster's: a release adding one of them
    would have it silently replaced by the hook."""
    added = {
        n for n, v in vars(SqliteEventLogStorageBase).items()
        if not n.startswith("__") and (callable(v) or isinstance(v, property))
    }
    assert sorted(added & set(dir(STOCK_SQLITE_EVENT_LOG))) == sorted(n for n in added if n.startswith("_"))
    assert sorted(n for n in added if n.startswith("_")) == ["_connect", "_initdb", "_store_asset_check_evaluation_planned"]


class _CountingEventLog(SqliteEventLogStorageBase):
    def __init__(self, base_dir: str):
        self.calls: list[str] = []
        super().__init__(base_dir)

    def init_database(self, engine, for_index_shard=False):
        self.calls.append(f"init {'index' if for_index_shard else 'run'}")
        super().init_database(engine, for_index_shard)

    def shard_connection(self, shard):
        self.calls.append(f"connect {shard}")
        return super().shard_connection(shard)


def test_the_sqlite_hooks_are_called_and_the_private_attributes_read_are_there(tmp_path):
    storage = _CountingEventLog(str(tmp_path / "events"))
    assert storage.calls[0] == "init index"
    storage.calls.clear()
    with storage.run_connection("r1") as conn:
        assert conn.in_transaction()
    assert storage.calls == ["connect r1", "init run"]
    assert "r1" in storage.initialized_shards
    with storage.database_lock:  # a lock, as the stock storage holds it around a connection
        pass
    event = dg.EventLogEntry(
        error_info=None, level="INFO", user_message="hi", run_id="r1", timestamp=1_700_000_000.0, step_key=None,
        job_name=None, dagster_event=None,
    )
    row = storage.event_row(event)
    assert {"run_id", "event", "timestamp", "partition"} <= row.keys() and row["run_id"] == "r1"
    assert row["timestamp"] == storage.event_insert_timestamp(event)
    storage.wipe()
    assert "r1" not in storage.initialized_shards  # the property follows the set a wipe replaces
    storage.dispose()
    scripts = ScriptDirectory.from_config(sqlite_event_log_alembic_config())
    assert scripts.get_current_head()  # the migration scripts the new-file init stamps with


def test_the_sqlite_storage_hands_out_the_replaced_event_log(tmp_path):
    storage = DagsterSqliteStorage.from_local(str(tmp_path))
    stock = storage.event_log_storage
    assert Path(stock.path_for_shard("r")).parent == Path(event_logs_directory(str(tmp_path)))
    mine = SqliteEventLogStorageBase(event_logs_directory(str(tmp_path)))
    replace_event_log_storage(storage, mine)
    assert storage.event_log_storage is mine
    storage.dispose()


def test_the_launcher_and_compute_log_manager_keep_what_is_read(tmp_path):
    with dg.DagsterInstance.local_temp(str(tmp_path)) as instance:
        assert isinstance(instance.run_launcher, dg.DefaultRunLauncher)
        assert run_launcher_instance(instance.run_launcher) is instance
        folder = compute_log_directory(instance.compute_log_manager)
        assert folder is not None, "the local compute log manager no longer keeps _base_dir"
        os.makedirs(os.path.join(folder, "run-1"))
        instance.compute_log_manager.delete_logs(prefix=["run-1"])
        assert not os.path.exists(os.path.join(folder, "run-1"))  # the folder forget checks is the one deleted


def test_dagster_postgres_storages_still_connect_through_their_engine():
    """``replace_engine`` swaps ``_engine``, which each storage builds in ``__init__`` from its
    public ``postgres_url`` and connects through (the PostgreSQL instance test counts the pooled
    connections)."""
    storages = [dagster_postgres.PostgresRunStorage, dagster_postgres.PostgresEventLogStorage,
                dagster_postgres.PostgresScheduleStorage]
    for cls in storages:
        init = inspect.getsource(cls.__init__)
        assert "self._engine = " in init and "self.postgres_url = " in init, cls
        assert "connection(self._engine)" in inspect.getsource(cls).replace(init, ""), cls


def test_an_evaluation_targeting_the_latest_materialization_is_current(instance):
    @dg.asset(partitions_def=PARTS, check_specs=[dg.AssetCheckSpec("ok", asset="marked", partitions_def=PARTS)])
    def marked():
        yield dg.MaterializeResult(check_results=[dg.AssetCheckResult(check_name="ok", passed=True)])

    for key in ("x", "y", "x"):
        assert dg.materialize([marked], instance=instance, partition_key=key).success
    targets = latest_materialization_targets(instance, marked.key, ["x", "y"])
    latest = {
        key: instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=marked.key, asset_partitions=[key]), limit=1).records[0]
        for key in ("x", "y")
    }
    assert {k: (t.run_id, t.storage_id) for k, t in targets.items()} == {k: (r.run_id, r.storage_id) for k, r in latest.items()}

    evaluation = dg.AssetCheckEvaluation(
        asset_key=marked.key, check_name="ok", passed=False, partition="y", target_materialization_data=targets["y"]
    )
    instance.report_runless_asset_event(evaluation)
    infos = {
        i.partition_key: (i.latest_execution_status.value, i.is_current)
        for i in instance.event_log_storage.get_asset_check_partition_info([dg.AssetCheckKey(marked.key, "ok")])
    }
    assert infos == {"x": ("SUCCEEDED", True), "y": ("FAILED", True)}


def test_partition_figures_land_as_the_public_call_puts_them(instance):
    """The fast path writes the accumulator ``context.add_asset_metadata`` fills; if a release moves
    it, the adapter falls back to the public call and this test says so."""
    from memory_pipeline.orchestration.dagster_adapter import add_partition_metadata
    from memory_pipeline.orchestration.runs import range_tags

    used = []

    @dg.asset(partitions_def=PARTS, backfill_policy=dg.BackfillPolicy.single_run())
    def figured(context) -> None:
        step = context.op_execution_context._step_execution_context
        used.append(hasattr(step, "_metadata_accumulator"))
        for key in context.partition_keys:
            add_partition_metadata(context, key, {"rows": ord(key)})

    assert dg.materialize([figured], instance=instance, tags=range_tags("x", "y")).success
    assert used == [True], "Dagster moved the metadata accumulator: dagster_adapter uses the slow public call"
    latest = {
        key: instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=figured.key, asset_partitions=[key]), limit=1)
        .records[0].asset_materialization.metadata["rows"].value
        for key in ("x", "y")
    }
    assert latest == {"x": ord("x"), "y": ord("y")}
