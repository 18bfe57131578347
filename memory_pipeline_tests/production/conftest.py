"""Fixtures of the production tests: a fresh PostgreSQL database and Dagster running as a service.

One service is shared by the tests of this folder (starting it costs ~20 s); it is stopped and
its database dropped at the end of the session, also when a test fails or is interrupted. Its
schedules are stopped before the daemon starts and wait for the test that starts them; so is the
sensor whose runs no test here waits for.
"""

from __future__ import annotations

import pytest
import yaml

from memory_pipeline_tests.production.service import (
    EVERY_MINUTE,
    LOCATION,
    REPO,
    REPOSITORY,
    create_database,
    drop_database,
    pg_admin_connection,
    start_daemon,
    start_service,
    stop_automation,
    stop_service,
)

STARTUP_TIMEOUT_S = 180

SERVICE_ENV = {
    "MEMORY_PIPELINE_EMBEDDER": "minilm",
    # The deployment turns automation on, as docs/deploy.md says (it starts stopped otherwise).
    "MEMORY_PIPELINE_AUTOMATION": "running",
    # Maintenance schedules run every minute in the test instead of nightly / every 6 hours, once
    # test_schedules_run_from_the_daemon starts them (hold_automation).
    "MEMORY_PIPELINE_OPTIMIZE_CRON": EVERY_MINUTE,
    "MEMORY_PIPELINE_PRUNE_CRON": EVERY_MINUTE,
    "MEMORY_PIPELINE_ACTIVATION_CRON": EVERY_MINUTE,
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


POOLS_QUERY = """
query Pools($selector: RepositorySelector!) {
  repositoryOrError(repositorySelector: $selector) {
    __typename
    ... on Repository { usedSolids { definition { name pools } } }
  }
}
"""

# Typed-memory extraction (memories/test_sensors.py, cli/test_memories.py): a run per tenant that
# loads the embedding model (~30 CPU s each), which nothing here asserts on and which would hold the
# embedding pool ahead of the backfill the end-to-end test waits for.
UNAWAITED_SENSORS = ("typed_memories_sensor",)

AUTOMATION_QUERY = """
query Automation($selector: RepositorySelector!) {
  repositoryOrError(repositorySelector: $selector) {
    __typename
    ... on Repository {
      sensors { name sensorState { id status } }
      schedules { name scheduleState { id status } }
    }
  }
}
"""

SET_POOL_LIMIT = """
mutation SetPool($pool: String!, $limit: Int!) { setConcurrencyLimit(concurrencyKey: $pool, limit: $limit) }
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


def set_pool_limits(service) -> dict[str, int]:
    """Gives every pool the code declares an explicit limit, as an operator does when deploying.

    The limit is dagster.yaml's ``pools.default_limit``. Left to that default, the first steps of
    a pool to run at once in two runs race to create its row and one run fails (dagster 1.13 on
    PostgreSQL, dagster-io/dagster#33552).
    """
    default = yaml.safe_load((REPO / "deploy" / "dagster.yaml").read_text())["concurrency"]["pools"]["default_limit"]
    selector = {"repositoryLocationName": LOCATION, "repositoryName": REPOSITORY}
    repo = service.graphql(POOLS_QUERY, {"selector": selector})["repositoryOrError"]
    pools = sorted({pool for used in repo["usedSolids"] for pool in used["definition"]["pools"]})
    assert pools, f"no pools declared by the code location: {repo}"
    for pool in pools:
        assert service.graphql(SET_POOL_LIMIT, {"pool": pool, "limit": default})["setConcurrencyLimit"] is True
    return {pool: default for pool in pools}


def hold_automation(service) -> None:
    """Stops every schedule, which the deployment's automation starts running, and the sensors of
    ``UNAWAITED_SENSORS`` before the daemon starts; test_schedules_run_from_the_daemon starts the
    schedules.

    On the test's every-minute crons the two schedules would otherwise launch two runs a minute for
    the whole session (each a process loading the code location), taking run slots and the LanceDB
    write pool from the runs the other tests wait for.
    """
    selector = {"repositoryLocationName": LOCATION, "repositoryName": REPOSITORY}
    repo = service.graphql(AUTOMATION_QUERY, {"selector": selector})["repositoryOrError"]
    assert repo["__typename"] == "Repository", repo
    sensors = {sensor["name"]: sensor["sensorState"] for sensor in repo["sensors"]}
    assert set(UNAWAITED_SENSORS) <= set(sensors), sorted(sensors)
    held = [(name, sensors[name], "sensor") for name in UNAWAITED_SENSORS]
    held += [(schedule["name"], schedule["scheduleState"], "schedule") for schedule in repo["schedules"]]
    for name, state, kind in held:
        assert state["status"] == "RUNNING", f"MEMORY_PIPELINE_AUTOMATION=running leaves {name} {state['status']}"
        stop_automation(service, kind, state["id"])


@pytest.fixture(scope="session")
def dagster_service(pg_database, tmp_path_factory):
    """Code server, daemon and webserver on the production deploy/dagster.yaml, with the code loaded."""
    db_name, pg_user = pg_database
    service = start_service(tmp_path_factory.mktemp("dagster_service"), db_name, pg_user, SERVICE_ENV)
    try:
        try:
            service.wait_for("the webserver to serve the memory_pipeline code location", lambda: location_loaded(service), STARTUP_TIMEOUT_S)
        except RuntimeError as exc:
            pytest.fail(f"{exc}\n{service.logs()}")
        set_pool_limits(service)
        hold_automation(service)
        start_daemon(service)
        yield service
    finally:
        outcomes = stop_service(service)
        print("\n".join(outcomes))
        leaked = [o for o in outcomes if "still alive" in o]
        assert not leaked, f"{leaked}\n{service.logs()}"
