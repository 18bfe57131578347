"""The webserver's UI as a person sees it: the asset graph in headless Chromium.

Proves that the running webserver (on the production instance configuration) serves a UI that
renders the project's asset graph from the code server, starting at the source assets; that a
tenant's partition of the index shows that partition's own figures; and that the checks tab lists
the index checks with their descriptions; and that after a backfill of two tenants in one run,
each index check reads Passed for each tenant's partition, as the checks page asks the webserver's
GraphQL API from the browser (it read "Missing" for both beside a passed history). Screenshots are
kept under ``test-artifacts/`` for a person to look at.
"""

from __future__ import annotations

import json

import pytest

from memory_pipeline.l0.checks import ALL_CHECKS
from memory_pipeline.orchestration.partitions import TENANTS_PARTITION
from memory_pipeline_tests.production.browser import Browser, find_chromium
from memory_pipeline_tests.production.service import LOCATION, REPO, REPOSITORY, stop_automation

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

ARTIFACTS = REPO / "test-artifacts"
PAGE_TIMEOUT_S = 120
SETTLE_S = 20
BUSY = ["Loading", "fetching statuses"]  # the graph is drawn; statuses still arriving
L0_GROUP = "l0_index"
L0_ASSETS = ["memory_chunks", "memory_embeddings", "memory_index"]
SOURCES = {"markdown_memory", "session_transcripts"}
ALL_ASSETS = """
query { assetNodes { assetKey { path } groupName } }
"""
MATERIALIZED = """
query Latest($key: AssetKeyInput!) {
  assetOrError(assetKey: $key) {
    ... on Asset { assetMaterializations(limit: 50) { partition metadataEntries { label ... on IntMetadataEntry { intValue } } } }
  }
}
"""

CHECK_STATUSES = """
query Checks($key: AssetKeyInput!) {
  assetNodeOrError(assetKey: $key) {
    ... on AssetNode { assetChecksOrError { ... on AssetChecks { checks { name canExecuteIndividually partitionStatuses {
      __typename
      ... on AssetCheckDefaultPartitionStatuses {
        succeededPartitions failedPartitions inProgressPartitions skippedPartitions executionFailedPartitions
      }
    } } } } }
  }
}
"""
ADD_PARTITION = """
mutation Add($selector: RepositorySelector!, $name: String!, $key: String!) {
  addDynamicPartition(repositorySelector: $selector, partitionsDefName: $name, partitionKey: $key) { __typename }
}
"""
SENSORS = """
query Sensors($selector: RepositorySelector!) {
  repositoryOrError(repositorySelector: $selector) { ... on Repository { sensors { name sensorState { id status } } } }
}
"""
BACKFILL = """
mutation Backfill($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) { __typename ... on LaunchBackfillSuccess { backfillId } ... on PythonError { message } }
}
"""
BACKFILL_STATUS = """
query Backfill($id: String!) { partitionBackfillOrError(backfillId: $id) { ... on PartitionBackfill { status } } }
"""
RUNS = """
query Runs($filter: RunsFilter) { runsOrError(filter: $filter) { ... on Runs { results { runId status } } } }
"""
BACKFILL_TIMEOUT_S = 420
TWO_TENANTS = {"ui-bot~ana": "ui-bot/users/ana/MEMORY.md", "ui-bot~ben": "ui-bot/users/ben/MEMORY.md"}


@pytest.fixture
def chromium():
    executable = find_chromium()
    if executable is None:
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium; .ci/run installs it in CI)")
    pytest.importorskip("websockets.sync.client", reason="the websockets package (a dagster-webserver dependency) is missing")
    return executable


def test_asset_graph_page_shows_the_assets(dagster_service, chromium, tmp_path):
    service = dagster_service
    nodes = service.graphql(ALL_ASSETS)["assetNodes"]
    groups = sorted({n["groupName"] for n in nodes})

    with Browser(chromium, tmp_path / "chromium-profile") as browser:
        # The lineage of the whole code location shows one box per group.
        browser.navigate(f"{service.url}/asset-groups")
        try:
            browser.wait_for_text(groups, PAGE_TIMEOUT_S)
            browser.settle(BUSY, SETTLE_S)
        finally:
            shot = browser.screenshot(ARTIFACTS / "asset_graph.png")
        # Each group's own graph shows its assets.
        for group in groups:
            browser.navigate(f"{service.url}/locations/{LOCATION}/asset-groups/{group}")
            assets = [n["assetKey"]["path"][-1] for n in nodes if n["groupName"] == group]
            try:
                browser.wait_for_text(assets, PAGE_TIMEOUT_S)
                browser.settle(BUSY, SETTLE_S)
            finally:
                group_shot = browser.screenshot(ARTIFACTS / f"asset_graph_{group}.png")
            assert group_shot.stat().st_size > 10_000
    assert shot.stat().st_size > 10_000
    assert L0_GROUP in groups and set(L0_ASSETS) <= {n["assetKey"]["path"][-1] for n in nodes}
    assert SOURCES <= {n["assetKey"]["path"][-1] for n in nodes if n["groupName"] == "sources"}


def test_partition_metadata_and_checks_tab(dagster_service, chromium, tmp_path):
    """Runs after the end-to-end test of this folder, which indexed the tenants it dropped."""
    service = dagster_service
    found = service.graphql(MATERIALIZED, {"key": {"path": ["memory_index"]}})["assetOrError"]
    own = [
        m for m in found.get("assetMaterializations") or []
        if m["partition"] and "chunks_written" in {e["label"] for e in m["metadataEntries"]}
    ]
    if not own:
        pytest.skip("no partition of memory_index materialized (the end-to-end test of this folder materializes them)")
    figures = {e["label"]: e.get("intValue") for e in own[0]["metadataEntries"]}
    assert figures["dagster/row_count"] > 0, figures
    partition = own[0]["partition"]

    with Browser(chromium, tmp_path / "chromium-profile") as browser:
        browser.navigate(f"{service.url}/assets/memory_index?view=partitions&partition={partition}")
        try:
            browser.wait_for_text([partition, "chunks_written", "files_to_reindex"], PAGE_TIMEOUT_S)
            browser.settle(BUSY, SETTLE_S)
        finally:
            shot = browser.screenshot(ARTIFACTS / "memory_index_partition.png")
        browser.navigate(f"{service.url}/assets/memory_index?view=checks")
        try:
            browser.wait_for_text(["manifest_matches_chunks", "one_vector_per_chunk", "chunk count and content hash"], PAGE_TIMEOUT_S)
            browser.settle(BUSY, SETTLE_S)
        finally:
            checks_shot = browser.screenshot(ARTIFACTS / "memory_index_checks.png")
    assert shot.stat().st_size > 10_000 and checks_shot.stat().st_size > 10_000


def graphql_from_page(browser: Browser, query: str, variables: dict) -> dict:
    """What the UI's own request to the webserver's GraphQL endpoint answers, made from the page."""
    body = json.dumps({"query": query, "variables": variables})
    expression = (
        f"fetch('/graphql', {{method: 'POST', headers: {{'Content-Type': 'application/json'}}, body: {json.dumps(body)}}})"
        ".then(r => r.json())"
    )
    answer = browser.send("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
    return answer["result"]["value"]["data"]


def test_check_status_per_partition_after_a_backfill_of_two_tenants(dagster_service, chromium, tmp_path):
    service = dagster_service
    selector = {"repositoryLocationName": LOCATION, "repositoryName": REPOSITORY}
    # The sensor stays out of it: the two partitions are materialized by the backfill alone.
    sensors = service.graphql(SENSORS, {"selector": selector})["repositoryOrError"]["sensors"]
    workspace_sensor = next(s for s in sensors if s["name"] == "workspace_sensor")
    if workspace_sensor["sensorState"]["status"] == "RUNNING":
        stop_automation(service, "sensor", workspace_sensor["sensorState"]["id"])
    for key, path in TWO_TENANTS.items():
        note = service.root / path
        note.parent.mkdir(parents=True, exist_ok=True)
        note.write_text(f"# {key}\n\n{key} prefers answers in Portuguese.\n", encoding="utf-8")
        added = service.graphql(ADD_PARTITION, {"selector": selector, "name": TENANTS_PARTITION, "key": key})
        assert added["addDynamicPartition"]["__typename"] == "AddDynamicPartitionSuccess", added
    launched = service.graphql(BACKFILL, {"params": {
        "assetSelection": [{"path": [name]} for name in L0_ASSETS], "partitionNames": sorted(TWO_TENANTS), "fromFailure": False,
    }})["launchPartitionBackfill"]
    assert launched["__typename"] == "LaunchBackfillSuccess", launched
    backfill = launched["backfillId"]

    def done() -> tuple[bool, object]:
        status = service.graphql(BACKFILL_STATUS, {"id": backfill})["partitionBackfillOrError"]["status"]
        assert status not in {"FAILED", "COMPLETED_FAILED", "CANCELED"}, status
        return status in {"COMPLETED", "COMPLETED_SUCCESS"}, status

    service.wait_for(f"backfill {backfill} of {sorted(TWO_TENANTS)}", done, BACKFILL_TIMEOUT_S)
    runs = service.graphql(RUNS, {"filter": {"tags": [{"key": "dagster/backfill", "value": backfill}]}})["runsOrError"]["results"]
    assert [r["status"] for r in runs] == ["SUCCESS"], f"one run for both tenants: {runs}"

    with Browser(chromium, tmp_path / "chromium-profile") as browser:
        browser.navigate(f"{service.url}/assets/memory_index?view=checks")
        try:
            browser.wait_for_text(list(ALL_CHECKS), PAGE_TIMEOUT_S)
            browser.settle(BUSY, SETTLE_S)
            answer = graphql_from_page(browser, CHECK_STATUSES, {"key": {"path": ["memory_index"]}})
        finally:
            shot = browser.screenshot(ARTIFACTS / "memory_index_check_partitions.png")
    checks = answer["assetNodeOrError"]["assetChecksOrError"]["checks"]
    ours = {
        check["name"]: {
            status: sorted(set(check["partitionStatuses"][status]) & set(TWO_TENANTS))
            for status in ("succeededPartitions", "failedPartitions", "inProgressPartitions", "skippedPartitions", "executionFailedPartitions")
        }
        for check in checks
    }
    passed = {"succeededPartitions": sorted(TWO_TENANTS), "failedPartitions": [], "inProgressPartitions": [],
              "skippedPartitions": [], "executionFailedPartitions": []}
    assert ours == {name: passed for name in ALL_CHECKS}
    # Each check can be run again on its own, without materializing the asset.
    assert {check["name"]: check["canExecuteIndividually"] for check in checks} == {name: "CAN_EXECUTE" for name in ALL_CHECKS}
    assert shot.stat().st_size > 10_000
