"""The production instance's storage: PostgreSQL, its connection read from ``DAGSTER_PG_*``.

``deploy/dagster.yaml`` names this class instead of dagster-postgres' own, only to check the
environment first: with the stock class every unset variable is one paragraph of stack trace;
here an unset one is a single line naming it. The storage itself is dagster-postgres'
``DagsterPostgresStorage``, configured exactly as its documentation shows, so the runs it
launches and the services it starts see an ordinary PostgreSQL instance.

One difference: each process keeps its connections open between writes. The stock storages
connect anew for every statement (a run of 34 events opened 74 connections; the 70 LoCoMo dev
sessions' consolidation runs took 92 s on the local server); held in a pool, the next run opens
only the few a nested write needs beside them, and those runs took 47 s, 53 s with the ping below
(``bench/consolidate.py --dagster-modes launch``, ``bench/README.md``). Every process
that builds the instance, run workers, daemon and code server included, comes through this
class (``dagster.yaml`` names it), so each holds one connection per storage and opens more only
while several threads write at once. A kept connection is tested before each use, so one the
server has closed (a restart, an idle timeout) is replaced instead of failing a write. The class
also sets ``DAGSTER_EVENT_BATCH_SIZE`` for the process (``write_events_in_batches``), so that
Dagster hands dagster-postgres the materializations of a run's partitions together, which it
inserts in one statement (the launch path above, twice each, interleaved: 36-40 s instead of
66-69 s).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import sqlalchemy
import yaml
from dagster_postgres import DagsterPostgresStorage
from dagster_postgres.utils import get_conn_string

from memory_pipeline.orchestration.dagster_adapter import ConfigurableClassData, replace_engine
from memory_pipeline.orchestration.instance.sqlite import write_events_in_batches

REQUIRED = {"hostname": "DAGSTER_PG_HOST", "username": "DAGSTER_PG_USER", "db_name": "DAGSTER_PG_DB"}
OPTIONAL = {"port": "DAGSTER_PG_PORT", "password": "DAGSTER_PG_PASSWORD"}  # 5432, no password (trust)
# dagster-postgres installs psycopg2; SQLAlchemy 2.1 would otherwise pick psycopg 3.
SCHEME = "postgresql+psycopg2"
# As dagster-postgres pools the webserver's connections: one kept, up to POOL_OVERFLOW more while
# threads write at once, renewed after POOL_RECYCLE_S; and pinged before use.
POOL_OVERFLOW, POOL_RECYCLE_S = 20, 3600


class PostgresSettingMissing(SystemExit):
    """Ends the command with one line instead of a stack trace: the fix is in the environment."""


def missing_settings(environ: Mapping[str, str] = os.environ) -> list[str]:
    return [name for name in REQUIRED.values() if not environ.get(name)]


def postgres_config(environ: Mapping[str, str] = os.environ) -> dict:
    """dagster-postgres' ``postgres_db`` configuration, every value read from its variable."""
    fields = {**REQUIRED, **{key: name for key, name in OPTIONAL.items() if environ.get(name)}}
    return {"postgres_db": {key: {"env": name} for key, name in fields.items()} | {"scheme": SCHEME}}


class PostgresStorageFromEnvironment(DagsterPostgresStorage):
    """Checks ``DAGSTER_PG_HOST``, ``_USER`` and ``_DB`` (``_PORT``, ``_PASSWORD`` optional), then
    opens dagster-postgres' storage on them (Dagster loads only ``DagsterStorage`` subclasses here;
    the object it gets is the stock class)."""

    @classmethod
    def config_type(cls) -> dict:
        return {}

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData | None, config_value: dict) -> DagsterPostgresStorage:
        missing = missing_settings()
        if missing:
            raise PostgresSettingMissing(
                f"error: {', '.join(missing)} not set: the PostgreSQL instance (deploy/dagster.yaml) reads its "
                "connection from DAGSTER_PG_HOST, DAGSTER_PG_PORT, DAGSTER_PG_USER, DAGSTER_PG_PASSWORD and "
                "DAGSTER_PG_DB; unset DAGSTER_HOME to use the local SQLite instance (see docs/deploy.md)"
            )
        config = postgres_config()
        values = {key: os.environ[ref["env"]] for key, ref in config["postgres_db"].items() if key != "scheme"}
        # What the storage reports of itself (`dagster instance info`) and hands to whatever
        # rebuilds one of its parts alone: the stock class with variable references, as if
        # dagster.yaml had named it directly. A process built from the instance reference (a run
        # worker's) comes through this class again, pooled connections included.
        stock = ConfigurableClassData("dagster_postgres", "DagsterPostgresStorage", yaml.safe_dump(config))
        storage = DagsterPostgresStorage(postgres_url=get_conn_string(**values, scheme=SCHEME), inst_data=stock)
        for part in (storage.run_storage, storage.event_log_storage, storage.schedule_storage):
            keep_connections(part)
        write_events_in_batches()
        return storage


def keep_connections(part) -> None:
    """Give one of dagster-postgres' storages a pooled engine in place of its engine without a pool
    (the attribute its own ``optimize_for_webserver`` replaces; that method cannot ping)."""
    replace_engine(part, sqlalchemy.create_engine(
        part.postgres_url, isolation_level="AUTOCOMMIT", pool_size=1, max_overflow=POOL_OVERFLOW,
        pool_recycle=POOL_RECYCLE_S, pool_pre_ping=True,
    ))
