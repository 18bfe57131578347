"""The ``typed_memories`` asset through Dagster: a tenant partition extracts into LanceDB, a rerun
finds every file unchanged, and run tags choose the sources, as ``graph ingest`` sets them.
"""

from __future__ import annotations

import dagster as dg
import pytest

from memory_pipeline.memories.assets import MAX_AGE_TAG, SOURCE_TAG, typed_memories
from memory_pipeline.memories.stats import graph_stats
from memory_pipeline.memories.store import GraphStore
from memory_pipeline.orchestration.partitions import TENANTS_PARTITION
from memory_pipeline_tests.helpers import make_resources

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
    store = GraphStore(lance_uri, 64)
    rows = store.memory_rows(KEY)
    assert rows.height == first["memories_written"] > 10
    assert set(rows["tenant"].to_list()) == {KEY}
    stats = graph_stats(store, [KEY])
    assert (stats["with_embedding"], stats["without_embedding"]) == (rows.height, 0)
    assert stats["by_source"]["markdown"] > 0 and stats["by_source"]["transcript"] > 0

    second = _metadata(_materialize(instance, sample_root, lance_uri))
    assert (second["files_extracted"], second["files_unchanged"], second["memories_written"]) == (0, 5, 0)
    assert store.memory_rows(KEY).height == rows.height


def test_run_tags_choose_the_source(instance, sample_root, lance_uri):
    instance.add_dynamic_partitions(TENANTS_PARTITION, [KEY])
    meta = _metadata(_materialize(instance, sample_root, lance_uri, {SOURCE_TAG: "transcript", MAX_AGE_TAG: "3650"}))
    assert meta["source"] == "transcript" and meta["files_extracted"] == 2
    sources = set(GraphStore(lance_uri, 64).memory_rows(KEY)["source"].to_list())
    assert sources == {"transcript"}
    with pytest.raises(dg.Failure, match="use markdown, transcript or all"):
        _materialize(instance, sample_root, lance_uri, {SOURCE_TAG: "email"})
