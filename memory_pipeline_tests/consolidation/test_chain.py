"""The whole chain through Dagster: sample transcripts -> episodes -> graph -> dedup -> dreaming ->
the L0 index -> recall. The dreamed file is indexed like any memory file and found by search, with
its citation; the human-written memory files are untouched; running everything again adds nothing."""

import dagster as dg
import pytest

from memory_pipeline.consolidation import defs as consolidation
from memory_pipeline.consolidation.assets import scope_config
from memory_pipeline.consolidation.launch import completed_tenants, run_consolidation, run_dreaming
from memory_pipeline.embedding import HashEmbedder
from memory_pipeline.l0.assets import l0_assets, l0_index_job
from memory_pipeline.l0.store import ChunkIndex
from memory_pipeline.orchestration.runs import run_partitioned_job
from memory_pipeline_tests.helpers import make_resources
from memory_pipeline_tests.helpers.consolidation import ALICE, dreamed_path, human_files, store_for

pytestmark = pytest.mark.slow


def test_transcripts_to_dreamed_file_to_search(sample_root, lance_uri):
    # In memory: the chain's runs log about 700 events, and a SQLite event log on disk opens a
    # connection for each (half the test's time).
    instance = dg.DagsterInstance.ephemeral()
    defs = dg.Definitions(
        assets=[*l0_assets, *consolidation.ASSETS],
        jobs=[l0_index_job, *consolidation.JOBS],
        resources=make_resources(sample_root, lance_uri),
    )
    before = human_files(sample_root)
    assert completed_tenants(sample_root, 30, [ALICE]) == [ALICE]
    consolidated = run_consolidation(defs, instance, [ALICE])
    assert consolidated and all(r.success for r in consolidated)
    dreamed = run_dreaming(defs, instance, [ALICE])
    assert dreamed and all(r.success for r in dreamed)
    path = dreamed_path(sample_root)
    rel = path.relative_to(sample_root).as_posix()
    text = path.read_text()
    assert "Lisbon (2026-10-26 to 2026-11-11)" in text and "Porto (since 2026-11-11)" in text
    # Tomás becomes her manager on 1 December (said on 18 November): Dana's relation ends then,
    # as the knowledge graph and the run metadata say too.
    assert "Dana Whitfield (2026-10-30 to 2026-12-01)" in text

    assert run_partitioned_job(defs, "l0_index_job", instance, [ALICE]).success
    chunks = ChunkIndex(lance_uri).chunk_rows(ALICE, ["path", "start_line", "end_line", "text"])
    dreamed = chunks.filter(chunks["path"] == rel)
    assert dreamed.height >= 1 and any("Porto" in t for t in dreamed["text"])
    assert store_for(lance_uri).episode_rows(ALICE, "promoted_at IS NULL").height == 0

    from memory_pipeline.recall.search import search

    results = search("Where does Alice live now, Lisbon or Porto?", "support-bot", "alice", store=lance_uri,
                     embedder=HashEmbedder(), k=10, min_score=0.0)
    hits = [r for r in results if r.path == rel]
    assert hits and hits[0].citation.startswith(f"{rel}#L")
    assert human_files(sample_root) == before

    graph = store_for(lance_uri)
    snapshot = (graph.relation_rows(ALICE).sort("id"), graph.entity_rows(ALICE).sort("id"), graph.episode_rows(ALICE).sort("id"))
    # A second pass consolidating every session again changes nothing.
    run_consolidation(defs, instance, [ALICE], scope_config(again=True))
    run_dreaming(defs, instance, [ALICE])
    again = (graph.relation_rows(ALICE).sort("id"), graph.entity_rows(ALICE).sort("id"), graph.episode_rows(ALICE).sort("id"))
    for a, b in zip(snapshot, again):
        assert a.equals(b)
    assert path.read_text() == text


def test_the_graph_reads_the_sessions_the_episodes_read_in_the_same_run(sample_root, lance_uri, monkeypatch):
    """Within one run the graph takes the sessions the episodes step read from the run's memo
    (``WorkspaceResource.run_memo``): no transcript is read a second time."""
    import memory_pipeline.consolidation.pipeline as pipeline

    reads = []
    real = pipeline.load_session
    monkeypatch.setattr(pipeline, "load_session", lambda *args: reads.append(args[1].path) or real(*args))
    defs = dg.Definitions(assets=consolidation.ASSETS, jobs=consolidation.JOBS, resources=make_resources(sample_root, lance_uri))
    consolidated = run_consolidation(defs, dg.DagsterInstance.ephemeral(), [ALICE])
    assert consolidated and all(r.success for r in consolidated)
    assert store_for(lance_uri).relation_rows(ALICE).height > 0  # the graph read the episodes' turns
    assert reads == []
