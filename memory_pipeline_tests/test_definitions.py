"""Proves: the shipped ``Definitions`` is the graph an operator expects to see.

The asset graph starts at the raw sources (external ``markdown_memory`` and ``session_transcripts``,
partitioned like the assets that read them) and every asset downstream of them names its owner,
its code (linked to the repository when ``MEMORY_PIPELINE_CODE_URL`` names it) and, for a table,
its column schema with what each column means; ``memory_chunks`` shows the chunk rows it hands
on, not the file manifest. Every check is described, evaluated per partition,
and blocking where later steps read what it guards. Consolidation is partitioned by tenant with
transcripts only (no day: its partitions do not grow as days pass), and every sensor and schedule
starts stopped unless the deployment turns automation on.
"""

from __future__ import annotations

import dagster as dg

from memory_pipeline.config import get_settings
from memory_pipeline.consolidation.partitions import consolidation_partitions
from memory_pipeline.definitions import defs
from memory_pipeline.orchestration.partitions import SESSION_TENANT_JOBS, SESSION_TENANTS_PARTITION, TENANTS_PARTITION
from memory_pipeline.store.tables import CHUNKS

SOURCES = {"markdown_memory": TENANTS_PARTITION, "session_transcripts": SESSION_TENANTS_PARTITION}
READERS = {
    "memory_chunks": {"markdown_memory", "session_transcripts"},
    "typed_memories": {"markdown_memory", "session_transcripts"},
    "episodic_summaries": {"session_transcripts"},
    "compaction_flush": {"session_transcripts"},
}
TABLES = {"memory_chunks", "memory_index", "episodic_summaries", "semantic_graph", "entity_dedup", "typed_memories",
          "memory_activation"}
BLOCKING = {
    "one_vector_per_chunk", "no_orphan_rows", "unique_chunk_ids", "manifest_matches_chunks",
    "episodes_unique_and_embedded", "relations_valid", "no_relation_to_a_merged_entity", "dreamed_files_promoted_and_clean",
}
NOT_BLOCKING = {"memories_typed_and_embedded"}


def test_sources_lead_the_graph_and_every_asset_says_who_what_and_where():
    graph = defs.get_repository_def().asset_graph
    nodes = {key.to_user_string(): graph.get(key) for key in graph.get_all_asset_keys()}
    for name, partitions in SOURCES.items():
        node = nodes[name]
        assert not node.is_executable and node.group_name == "sources" and node.description
        assert node.partitions_def.name == partitions
    for name, sources in READERS.items():
        assert sources <= {p.to_user_string() for p in nodes[name].parent_keys}, name
    assert {"dreaming", "compaction_flush"} <= {p.to_user_string() for p in nodes["memory_chunks"].parent_keys}
    assert nodes
    for name, node in nodes.items():
        assert node.owners == ["team:memory-pipeline"], name
        assert node.description, name
        assert "dagster/code_references" in node.metadata, name
    for name in TABLES:
        assert isinstance(nodes[name].metadata["dagster/column_schema"], dg.TableSchema), name
        columns = nodes[name].metadata["dagster/column_schema"].columns
        assert "tenant" in {c.name for c in columns}
        assert [c.name for c in columns if not c.description] == [], name
    chunk_rows = [c.name for c in nodes["memory_chunks"].metadata["dagster/column_schema"].columns]
    assert chunk_rows == [c for c in CHUNKS.names if c not in ("model", "vector", "updated_at")]


def test_code_references_link_to_the_repository_when_it_is_named(monkeypatch):
    from memory_pipeline.definitions import with_code_references
    from memory_pipeline.l0.assets import INDEX_KEY, l0_index

    monkeypatch.setenv("MEMORY_PIPELINE_CODE_URL", "https://github.com/example/memory_pipeline")
    get_settings.cache_clear()
    try:
        [linked] = with_code_references([l0_index])
    finally:
        get_settings.cache_clear()
    [reference] = linked.specs_by_key[INDEX_KEY].metadata["dagster/code_references"].code_references
    line = l0_index.op.compute_fn.decorated_fn.__code__.co_firstlineno
    assert reference.url.split("#")[0] == "https://github.com/example/memory_pipeline/tree/main/memory_pipeline/l0/assets.py"
    assert int(reference.url.split("#L")[1]) <= line


def test_every_check_is_described_partitioned_and_blocking_where_data_spreads():
    graph = defs.get_repository_def().asset_graph
    specs = {key.name: graph.get_check_spec(key) for key in graph.asset_check_keys}
    assert set(specs) == BLOCKING | NOT_BLOCKING
    for name, spec in specs.items():
        assert spec.description, name
        assert spec.blocking == (name in BLOCKING), name
        assert spec.partitions_def == graph.get(spec.asset_key).partitions_def, name


def test_partition_space_is_bounded_and_automation_starts_stopped():
    assert isinstance(consolidation_partitions, dg.DynamicPartitionsDefinition)
    assert consolidation_partitions.name == SESSION_TENANTS_PARTITION
    repo = defs.get_repository_def()
    graph = repo.asset_graph
    for asset in ("episodic_summaries", "semantic_graph", "entity_dedup", "dreaming", "compaction_flush"):
        assert graph.get(dg.AssetKey(asset)).partitions_def == consolidation_partitions, asset
    # Forgetting a tenant reads a range of these jobs' runs as session-tenant keys.
    by_session_tenants = {job.name for job in repo.get_all_jobs() if job.partitions_def == consolidation_partitions}
    assert by_session_tenants == SESSION_TENANT_JOBS
    assert {s.name for s in repo.sensor_defs} == {
        "workspace_sensor", "consolidation_sensor", "dreaming_sensor", "flush_sensor", "typed_memories_sensor"
    }
    assert all(s.default_status == dg.DefaultSensorStatus.STOPPED for s in repo.sensor_defs)
    assert all(s.default_status == dg.DefaultScheduleStatus.STOPPED for s in repo.schedule_defs)
