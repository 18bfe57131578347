"""The ``typed_memories`` asset through Dagster: a tenant partition extracts into LanceDB, a rerun
finds every file unchanged, and run tags choose the sources, as ``memories ingest`` sets them; a run
over two tenants skips a badly named note in one and reports each tenant's own figures and check.
"""

from __future__ import annotations

import dagster as dg
import pytest

from memory_pipeline.memories.assets import MAX_AGE_TAG, SOURCE_TAG, typed_memories
from memory_pipeline.memories.stats import typed_memory_stats
from memory_pipeline.memories.store import TypedMemoryStore
from memory_pipeline.orchestration.partitions import TENANTS_PARTITION
from memory_pipeline.orchestration.runs import RANGE_END_TAG, RANGE_START_TAG
from memory_pipeline_tests.helpers import make_resources, write

pytestmark = pytest.mark.slow

KEY = "research-assistant~carol"


def _materialize(instance, sample_root, lance_uri, tags=None):
    return dg.materialize(
        [typed_memories], instance=instance, partition_key=KEY, tags=tags or {},
        resources=make_resources(sample_root, lance_uri),
    )


def _metadata(result) -> dict:
    mat = result.asset_materializations_for_node("typed_memories")[0]
    return {k: v.value for k, v in mat.metadata.items()}


def test_a_tenant_partition_extracts_then_skips_unchanged_files(instance, sample_root, lance_uri):
    instance.add_dynamic_partitions(TENANTS_PARTITION, [KEY])
    first = _metadata(_materialize(instance, sample_root, lance_uri))
    assert (first["files_extracted"], first["files_unchanged"]) == (5, 0)
    store = TypedMemoryStore(lance_uri, 64)
    rows = store.memory_rows(KEY)
    assert rows.height == first["memories_written"] > 10
    assert set(rows["tenant"].to_list()) == {KEY}
    stats = typed_memory_stats(store, [KEY])
    assert (stats["with_embedding"], stats["without_embedding"]) == (rows.height, 0)
    assert stats["by_source"]["markdown"] > 0 and stats["by_source"]["transcript"] > 0

    second = _metadata(_materialize(instance, sample_root, lance_uri))
    assert (second["files_extracted"], second["files_unchanged"], second["memories_written"]) == (0, 5, 0)
    assert store.memory_rows(KEY).height == rows.height


def test_run_tags_choose_the_source(instance, sample_root, lance_uri):
    instance.add_dynamic_partitions(TENANTS_PARTITION, [KEY])
    meta = _metadata(_materialize(instance, sample_root, lance_uri, {SOURCE_TAG: "transcript", MAX_AGE_TAG: "3650"}))
    assert meta["source"] == "transcript" and meta["files_extracted"] == 2
    sources = set(TypedMemoryStore(lance_uri, 64).memory_rows(KEY)["source"].to_list())
    assert sources == {"transcript"}
    with pytest.raises(dg.Failure, match="use markdown, transcript or all"):
        _materialize(instance, sample_root, lance_uri, {SOURCE_TAG: "email"})


def test_one_run_over_two_tenants_skips_a_bad_note_and_reports_each_tenant(instance, root, lance_uri):
    """A note named memory/2026-13-45.md is skipped with its reason in its tenant; both tenants
    complete in one run, each partition with its own figures and check."""
    ann, bob = "bot~ann", "bot~bob"
    write(root, "bot/users/ann/memory/2026-11-02.md", "- I prefer tea over coffee in the morning.\n")
    write(root, "bot/users/ann/memory/2026-13-45.md", "- We decided to move the launch to Friday.\n")
    write(root, "bot/users/bob/memory/2026-11-03.md", "- I work from Porto on Mondays.\n- Remind me to call Dana on Friday.\n")
    instance.add_dynamic_partitions(TENANTS_PARTITION, [ann, bob])
    result = dg.materialize(
        [typed_memories], instance=instance, resources=make_resources(root, lance_uri),
        tags={RANGE_START_TAG: ann, RANGE_END_TAG: bob},
    )
    assert result.success
    latest = {
        key: {
            name: value.value
            for name, value in instance.fetch_materializations(
                dg.AssetRecordsFilter(asset_key=dg.AssetKey("typed_memories"), asset_partitions=[key]), limit=1
            ).records[0].asset_materialization.metadata.items()
        }
        for key in (ann, bob)
    }
    assert (latest[ann]["files_extracted"], latest[ann]["files_skipped"]) == (1, 1)
    assert (latest[bob]["files_extracted"], latest[bob]["files_skipped"]) == (1, 0)
    store = TypedMemoryStore(lance_uri, 64)
    for key in (ann, bob):
        assert latest[key]["dagster/row_count"] == latest[key]["memories_written"] == store.memory_rows(key).height > 0
    checks = {
        (e.asset_check_evaluation_data.partition, e.asset_check_evaluation_data.passed)
        for e in result.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"
    }
    assert {(ann, True), (bob, True)} <= checks
