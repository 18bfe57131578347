"""Fixtures of the production tests: a fresh PostgreSQL database and Dagster running as a service.

One service is shared by the tests of this folder (starting it costs ~20 s); it is stopped and
its database dropped at the end of the session, also when a test fails or is interrupted.
"""

from __future__ import annotations

import pytest

from memory_pipeline_tests.production.service import (
    LOCATION,
    create_database,
    drop_database,
    pg_admin_connection,
    start_service,
    stop_service,
)

EVERY_MINUTE = "* * * * *"
STARTUP_TIMEOUT_S = 180

SERVICE_ENV = {
    "MEMORY_PIPELINE_EMBEDDER": "minilm",
    # Maintenance schedules run every minute in the test instead of nightly / every 6 hours.
    "MEMORY_PIPELINE_OPTIMIZE_CRON": EVERY_MINUTE,
    "MEMORY_PIPELINE_PRUNE_CRON": EVERY_MINUTE,
}

LOCATION_QUERY = """
query {
  workspaceOrError {
    __typename
    ... on Workspace {
      locationEntries {
        name
        loadStatus
        locationOrLoadError { __typename ... on PythonError { message } }
      }
    }
  }
}
"""


@pytest.fixture(scope="session")
def pg_database():
    """A new, empty database on the local PostgreSQL server; dropped afterwards."""
    conn, user_or_reason = pg_admin_connection()
    if conn is None:
        pytest.skip(f"PostgreSQL on 127.0.0.1:5432 cannot be reached ({user_or_reason}); start it, see docs/deploy.md")
    name = create_database(conn)
    try:
        yield name, user_or_reason
    finally:
        drop_database(conn, name)
        conn.close()


def location_loaded(service) -> tuple[bool, object]:
    entries = service.graphql(LOCATION_QUERY)["workspaceOrError"].get("locationEntries", [])
    for entry in entries:
        if entry["name"] == LOCATION:
            kind = (entry["locationOrLoadError"] or {}).get("__typename")
            if kind == "PythonError":
                raise RuntimeError(f"code location failed to load: {entry['locationOrLoadError']['message']}")
            return kind == "RepositoryLocation", entries
    return False, entries


@pytest.fixture(scope="session")
def dagster_service(pg_database, tmp_path_factory):
    """Code server, daemon and webserver on the production dagster.yaml, with the code loaded."""
    db_name, pg_user = pg_database
    service = start_service(tmp_path_factory.mktemp("dagster_service"), db_name, pg_user, SERVICE_ENV)
    try:
        try:
            service.wait_for("the webserver to serve the memory_pipeline code location", lambda: location_loaded(service), STARTUP_TIMEOUT_S)
        except RuntimeError as exc:
            pytest.fail(f"{exc}\n{service.logs()}")
        yield service
    finally:
        outcomes = stop_service(service)
        print("\n".join(outcomes))
        leaked = [o for o in outcomes if "still alive" in o]
        assert not leaked, f"{leaked}\n{service.logs()}"
