"""Dagster as operators run it: PostgreSQL storage, the daemon and the webserver as processes.

Proves, on the production deploy/dagster.yaml against a fresh PostgreSQL database: the daemon's sensor
indexes new Markdown files and a completed session dropped into the workspace (with the real
embedding model); consolidation follows a completed session when its assets are defined; a
backfill of the L0 index over every tenant, launched through the webserver's GraphQL API as the
UI does, indexes a file the stopped sensor never saw; and every schedule (LanceDB optimization,
episode pruning), held stopped and without runs until its test starts it through the GraphQL API,
then runs from the daemon on the short interval the test configures.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory_pipeline.l0.store import ChunkIndex
from memory_pipeline_tests.helpers import SAMPLE_ROOT
from memory_pipeline_tests.production.service import EVERY_MINUTE, LOCATION, REPOSITORY, no_failures, stop_automation

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

# Each bound covers the slowest step seen on a loaded 2-core machine (two other suites running):
# a run waits for its pool slot, then starts a process that loads the embedding model.
RUNS_TIMEOUT_S = float(os.environ.get("MEMORY_PIPELINE_E2E_TIMEOUT_S", "420"))
L0_ASSETS = ("memory_chunks", "memory_embeddings", "memory_index")
SENSOR = "workspace_sensor"
CONSOLIDATION_ASSET = "episodic_summaries"
SESSION_USER = "support-bot~alice"
GLOBAL_TENANT = "research-assistant~_global"
FAILED = {"FAILURE", "CANCELED", "CANCELING"}

RUNS_QUERY = """
query Runs($filter: RunsFilter) {
  runsOrError(filter: $filter) {
    __typename
    ... on Runs { results { runId status jobName tags { key value } } }
    ... on PythonError { message }
  }
}
"""

REPOSITORY_QUERY = """
query Repo($selector: RepositorySelector!) {
  repositoryOrError(repositorySelector: $selector) {
    __typename
    ... on Repository {
      assetNodes { assetKey { path } }
      sensors { name sensorState { id status } }
      schedules { name cronSchedule scheduleState { id status } }
    }
  }
}
"""

START_SCHEDULE = """
mutation Start($selector: ScheduleSelector!) {
  startSchedule(scheduleSelector: $selector) {
    __typename
    ... on ScheduleStateResult { scheduleState { status } }
    ... on PythonError { message }
  }
}
"""

PARTITION_KEYS = """
query Keys($key: AssetKeyInput!) {
  assetNodeOrError(assetKey: $key) { __typename ... on AssetNode { partitionKeys } }
}
"""

LAUNCH_BACKFILL = """
mutation LaunchPartitionBackfill($backfillParams: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $backfillParams) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PartitionKeysNotFoundError { message }
    ... on PythonError { message stack }
    ... on InvalidSubsetError { message }
    ... on UnauthorizedError { message }
  }
}
"""

BACKFILL_STATUS = """
query Backfill($id: String!) {
  partitionBackfillOrError(backfillId: $id) {
    __typename
    ... on PartitionBackfill { id status error { message } }
    ... on PythonError { message }
  }
}
"""

MATERIALIZATIONS = """
query Materializations($key: AssetKeyInput!, $partitions: [String!]) {
  assetOrError(assetKey: $key) {
    __typename
    ... on Asset { assetMaterializations(partitions: $partitions) { partition runId } }
  }
}
"""


def repository(service) -> dict:
    selector = {"repositoryLocationName": LOCATION, "repositoryName": REPOSITORY}
    repo = service.graphql(REPOSITORY_QUERY, {"selector": selector})["repositoryOrError"]
    assert repo["__typename"] == "Repository", repo
    return repo


def runs(service, **tags: str) -> list[dict]:
    variables = {"filter": {"tags": [{"key": k, "value": v} for k, v in tags.items()]}}
    result = service.graphql(RUNS_QUERY, variables)["runsOrError"]
    assert result["__typename"] == "Runs", result
    for run in result["results"]:
        run["tags"] = {t["key"]: t["value"] for t in run["tags"]}
    return result["results"]


def write_session(path: Path, completed_at: datetime) -> None:
    """A finished conversation of five turns ending with the ``session.completed`` marker."""
    turns = [
        ("user", "Our warehouse in Leixões switches to the new label printer on Monday."),
        ("assistant", "Noted: Leixões moves to the new label printer on Monday."),
        ("user", "Keep the old Zebra profile until Rui confirms the first batch printed fine."),
        ("assistant", "I will keep the Zebra profile until Rui confirms the first batch."),
        ("user", "Thanks, that is all for today."),
    ]
    lines = []
    for i, (role, content) in enumerate(turns):
        ts = completed_at - timedelta(minutes=len(turns) - i)
        lines.append({"role": role, "content": content, "ts": ts.strftime("%Y-%m-%dT%H:%M:%SZ"), "turn_id": f"t{i + 1}"})
    lines.append({"type": "session.completed", "ts": completed_at.strftime("%Y-%m-%dT%H:%M:%SZ")})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


def drop_agents(service, completed_at: datetime) -> dict[str, set[str]]:
    """Moves two agents' new files into the workspace, each in one rename (a tick sees all or none).

    Returns the paths, relative to the root, expected in LanceDB for each tenant.
    """
    staging = service.root.parent / "staging"
    support = staging / "support-bot"
    (support / "users" / "alice").mkdir(parents=True)
    shutil.copy(SAMPLE_ROOT / "support-bot/users/alice/MEMORY.md", support / "users/alice/MEMORY.md")
    write_session(support / "sessions/alice/sess-e2e-0001.jsonl", completed_at)
    research = staging / "research-assistant"
    (research / "memory").mkdir(parents=True)
    shutil.copy(SAMPLE_ROOT / "research-assistant/MEMORY.md", research / "MEMORY.md")
    (research / "memory" / "reading-list.md").write_text(
        "# Reading list\n\nFinish the survey of retrieval-augmented agents before the Thursday sync.\n",
        encoding="utf-8",
    )
    for agent in (support, research):
        agent.rename(service.root / agent.name)
    return {
        SESSION_USER: {"support-bot/users/alice/MEMORY.md", "support-bot/sessions/alice/sess-e2e-0001.jsonl"},
        GLOBAL_TENANT: {"research-assistant/MEMORY.md", "research-assistant/memory/reading-list.md"},
    }


def indexed_paths(service, tenant: str) -> set[str]:
    rows = ChunkIndex(service.lance_uri).chunk_rows(tenant, columns=["path"])
    return set(rows["path"].to_list()) if rows.height else set()


def sensor_runs_done(service, tenants: set[str]) -> tuple[bool, object]:
    found = runs(service, **{"dagster/sensor_name": SENSOR})
    no_failures(found, SENSOR)
    succeeded = {r["tags"].get("dagster/partition") for r in found if r["status"] == "SUCCESS"}
    busy = [r for r in found if r["status"] not in {"SUCCESS", *FAILED}]
    summary = [(r["tags"].get("dagster/partition"), r["status"]) for r in found]
    return tenants <= succeeded and not busy, summary


def paths_indexed(service, expected: dict[str, set[str]]) -> tuple[bool, object]:
    seen = {tenant: indexed_paths(service, tenant) for tenant in expected}
    return all(expected[t] <= seen[t] for t in expected), seen


def test_sensor_backfill_and_lancedb_rows(dagster_service):
    service = dagster_service
    started = time.monotonic()

    def phase(what: str) -> None:
        print(f"[{time.monotonic() - started:6.1f}s] {what}")
    completed_at = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=45)
    expected = drop_agents(service, completed_at)

    summary = service.wait_for(
        f"the {SENSOR} runs of {sorted(expected)} to succeed",
        lambda: sensor_runs_done(service, set(expected)),
        RUNS_TIMEOUT_S,
    )
    phase(f"sensor runs succeeded: {summary}")
    seen = service.wait_for("the dropped files' chunks in LanceDB", lambda: paths_indexed(service, expected), 30)
    for tenant, paths in expected.items():
        assert paths <= seen[tenant], f"{tenant}: expected {sorted(paths)} in LanceDB, found {sorted(seen[tenant])}"

    repo = repository(service)
    asset_names = {node["assetKey"]["path"][-1] for node in repo["assetNodes"]}
    assert set(L0_ASSETS) <= asset_names, asset_names
    if CONSOLIDATION_ASSET in asset_names:
        # The completed session is consolidated in its tenant's partition.
        key = SESSION_USER

        def consolidated() -> tuple[bool, object]:
            for sensor in repo["sensors"]:
                no_failures(runs(service, **{"dagster/sensor_name": sensor["name"]}), sensor["name"])
            result = service.graphql(MATERIALIZATIONS, {"key": {"path": [CONSOLIDATION_ASSET]}, "partitions": [key]})
            events = (result["assetOrError"] or {}).get("assetMaterializations") or []
            return bool(events), events

        service.wait_for(f"{CONSOLIDATION_ASSET} for partition {key}", consolidated, RUNS_TIMEOUT_S)
        phase(f"{CONSOLIDATION_ASSET} materialized for {key}")

    # The operator stops the sensor, a file arrives that no tick will see, and a backfill over
    # every tenant picks it up.
    sensor = next(s for s in repo["sensors"] if s["name"] == SENSOR)
    stop_automation(service, "sensor", sensor["sensorState"]["id"])
    late = service.root / "support-bot/users/alice/memory/2026-11-21.md"
    late.parent.mkdir(parents=True)
    late.write_text("# 2026-11-21\n\nAlice asked to move the Porto cutover review to Friday at 10:00.\n", encoding="utf-8")
    late_path = late.relative_to(service.root).as_posix()
    before_backfill = {tenant: len(ChunkIndex(service.lance_uri).chunk_rows(tenant)) for tenant in expected}

    keys = service.graphql(PARTITION_KEYS, {"key": {"path": ["memory_index"]}})["assetNodeOrError"]["partitionKeys"]
    assert sorted(keys) == sorted(expected), f"tenant partitions in the instance: {keys}"
    launched = service.graphql(
        LAUNCH_BACKFILL,
        {
            "backfillParams": {
                "assetSelection": [{"path": [name]} for name in L0_ASSETS],
                "partitionNames": keys,
                "fromFailure": False,
                "title": "L0 index of every tenant",
                "tags": [{"key": "memory_pipeline/trigger", "value": "e2e_backfill"}],
            }
        },
    )["launchPartitionBackfill"]
    assert launched["__typename"] == "LaunchBackfillSuccess", launched
    backfill_id = launched["backfillId"]
    phase(f"backfill {backfill_id} launched")

    def backfill_done() -> tuple[bool, object]:
        state = service.graphql(BACKFILL_STATUS, {"id": backfill_id})["partitionBackfillOrError"]
        if state.get("status") in {"FAILED", "COMPLETED_FAILED", "CANCELED"}:
            raise AssertionError(f"backfill {backfill_id} ended {state}; runs: {runs(service, **{'dagster/backfill': backfill_id})}")
        return state.get("status") in {"COMPLETED", "COMPLETED_SUCCESS"}, state

    service.wait_for(f"backfill {backfill_id} to complete", backfill_done, RUNS_TIMEOUT_S)
    phase("backfill completed")
    backfill_runs = runs(service, **{"dagster/backfill": backfill_id})
    assert [r["status"] for r in backfill_runs] == ["SUCCESS"], f"one run covers every tenant: {backfill_runs}"

    after = {tenant: indexed_paths(service, tenant) for tenant in expected}
    assert after[SESSION_USER] == expected[SESSION_USER] | {late_path}, after
    assert after[GLOBAL_TENANT] == expected[GLOBAL_TENANT], after
    rows = ChunkIndex(service.lance_uri).chunk_rows(SESSION_USER)
    assert len(rows) > before_backfill[SESSION_USER]
    assert len(ChunkIndex(service.lance_uri).chunk_rows(GLOBAL_TENANT)) == before_backfill[GLOBAL_TENANT]
    assert {len(v) for v in rows["vector"].to_list()} == {384}, "every chunk has one MiniLM vector"


def test_schedules_run_from_the_daemon(dagster_service):
    """Every schedule (optimize, prune) follows its cron variable and completes a run once started."""
    service = dagster_service
    schedules = repository(service)["schedules"]
    names = {s["name"] for s in schedules}
    assert "lancedb_optimize_schedule" in names, names
    for schedule in schedules:
        assert schedule["cronSchedule"] == EVERY_MINUTE, (
            f"schedule {schedule['name']} ignores the test's cron ({schedule['cronSchedule']}): read it from "
            "a MEMORY_PIPELINE_*_CRON setting (memory_pipeline/config.py) so the test can run it every minute"
        )
        # The service fixture stopped it before the daemon started: the daemon launched nothing for it.
        assert schedule["scheduleState"]["status"] == "STOPPED", schedule
        assert runs(service, **{"dagster/schedule_name": schedule["name"]}) == [], schedule["name"]
    try:
        for schedule in schedules:
            selector = {"repositoryLocationName": LOCATION, "repositoryName": REPOSITORY, "scheduleName": schedule["name"]}
            started = service.graphql(START_SCHEDULE, {"selector": selector})["startSchedule"]
            assert started.get("scheduleState", {}).get("status") == "RUNNING", started

        def scheduled_runs_succeeded() -> tuple[bool, object]:
            seen = {}
            for name in names:
                found = runs(service, **{"dagster/schedule_name": name})
                no_failures(found, name)
                seen[name] = [r["status"] for r in found]
            return all("SUCCESS" in statuses for statuses in seen.values()), seen

        seen = service.wait_for(f"a successful run of each schedule {sorted(names)}", scheduled_runs_succeeded, RUNS_TIMEOUT_S)
        print(f"scheduled runs: {seen}")
    finally:
        # Stopped again: a run a minute each would go on beside the tests that share the service.
        for state in (s["scheduleState"] for s in repository(service)["schedules"]):
            if state["status"] == "RUNNING":
                stop_automation(service, "schedule", state["id"])
