"""A database of the local PostgreSQL server for a benchmark's Dagster instance, as production has."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

import yaml

DEPLOY_CONFIG = Path(__file__).resolve().parent.parent / "deploy" / "dagster.yaml"


@contextmanager
def postgres_database() -> Iterator[dict | None]:
    """The storage section of ``deploy/dagster.yaml`` (production's) on a new database of the local
    PostgreSQL server, dropped afterwards, or None; made as the production tests make theirs."""
    from memory_pipeline_tests.production.service import PG_HOST, PG_PORT, create_database, drop_database, pg_admin_connection

    admin, user = pg_admin_connection()
    if admin is None:
        print(f"no PostgreSQL server on {PG_HOST}:{PG_PORT}: {user}")
        yield None
        return
    name = create_database(admin)
    variables = {"DAGSTER_PG_HOST": PG_HOST, "DAGSTER_PG_PORT": str(PG_PORT), "DAGSTER_PG_USER": user, "DAGSTER_PG_DB": name}
    try:
        with mock.patch.dict(os.environ, variables):  # the variables deploy/dagster.yaml reads, restored after
            yield yaml.safe_load(DEPLOY_CONFIG.read_text())["storage"]
    finally:
        drop_database(admin, name)
        admin.close()
