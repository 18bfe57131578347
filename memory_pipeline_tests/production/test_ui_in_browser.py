"""The webserver's UI as a person sees it: the asset graph in headless Chromium.

Proves that the running webserver (on the production instance configuration) serves a UI that
renders the project's asset graph from the code server, starting at the source assets; that a
tenant's partition of the index shows that partition's own figures; and that the checks tab lists
the index checks with their descriptions. Screenshots are kept under ``test-artifacts/`` for a
person to look at.
"""

from __future__ import annotations

import pytest

from memory_pipeline_tests.production.browser import Browser, find_chromium
from memory_pipeline_tests.production.service import LOCATION, REPO

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
