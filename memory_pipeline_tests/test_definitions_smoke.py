"""Smoke test: the whole ``Definitions`` loads and every one of its jobs runs with the real model.

Proves the shipped definitions (resources from the environment, IO manager, checks, sensors)
work together: the L0 job over every sample tenant with all-MiniLM-L6-v2 passes its checks and
the indexed rows carry 384-dimensional vectors; then each other job of each slice (consolidation,
dreaming, compaction flush, typed memories, activation, pruning, LanceDB maintenance) runs once on one tenant and succeeds (with
the hashing embedder: those jobs' real-model runs are covered by their own slow tests).
"""

from __future__ import annotations

import importlib

import dagster as dg
import pytest

from memory_pipeline.l0.store import ChunkIndex


@pytest.mark.slow
def test_definitions_load_and_l0_job_runs(sample_root, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMORY_PIPELINE_ROOT", str(sample_root))
    monkeypatch.setenv("MEMORY_PIPELINE_LANCEDB_URI", str(tmp_path / "lancedb"))
    monkeypatch.setenv("MEMORY_PIPELINE_EMBEDDER", "minilm")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    from memory_pipeline import config

    config.get_settings.cache_clear()
    import memory_pipeline.definitions as definitions

    defs = importlib.reload(definitions).defs
    repo = defs.get_repository_def()
    assert {"memory_chunks", "memory_embeddings", "memory_index"} <= {k.to_user_string() for k in repo.asset_graph.get_all_asset_keys()}
    assert "workspace_sensor" in {s.name for s in repo.sensor_defs}

    from memory_pipeline.orchestration.runs import discover_tenants, run_partitioned_job

    keys = discover_tenants(sample_root)
    assert "support-bot~alice" in keys and "research-assistant~carol" in keys
    # In memory: the jobs log over a thousand events, and a SQLite event log on disk opens a
    # connection for each.
    instance = dg.DagsterInstance.ephemeral()
    result = run_partitioned_job(defs, "l0_index_job", instance, keys)
    assert result.success
    evaluations = [e for e in result.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"]
    assert evaluations and all(e.asset_check_evaluation_data.passed for e in evaluations)
    monkeypatch.setenv("MEMORY_PIPELINE_EMBEDDER", "hash")
    monkeypatch.setenv("MEMORY_PIPELINE_LANCEDB_URI", str(tmp_path / "lancedb-hash"))
    config.get_settings.cache_clear()
    hashed = importlib.reload(definitions).defs
    ran = {"l0_index_job": [result], **_every_other_job(hashed, instance, sample_root, "support-bot~alice")}
    jobs = {job.name for job in repo.get_all_jobs() if not job.name.startswith("__")}
    assert set(ran) == jobs
    assert all(results and all(r.success for r in results) for results in ran.values()), ran
    rows = ChunkIndex(tmp_path / "lancedb").chunk_rows("support-bot~_global")
    assert rows.height > 0 and len(rows["vector"][0]) == 384
    assert rows["text"].str.contains("30 days").any()
    config.get_settings.cache_clear()


def _every_other_job(defs: dg.Definitions, instance: dg.DagsterInstance, root, tenant: str) -> dict[str, list]:
    """Each job after the L0 index, once, on one tenant (its last completed day for consolidation)."""
    from memory_pipeline.consolidation.launch import completed_tenants, run_consolidation, run_dreaming
    from memory_pipeline.orchestration.runs import run_partitioned_job

    assert completed_tenants(root, 30, [tenant]) == [tenant]
    return {
        "consolidation_job": run_consolidation(defs, instance, [tenant]),
        "dreaming_job": run_dreaming(defs, instance, [tenant]),
        "typed_memories_job": [run_partitioned_job(defs, "typed_memories_job", instance, [tenant])],
        "activation_job": [run_partitioned_job(defs, "activation_job", instance, [tenant])],
        # Without flush windows (a run launched by hand) the flush reads every transcript of the tenant.
        "compaction_flush_job": [
            defs.resolve_job_def("compaction_flush_job").execute_in_process(instance=instance, partition_key=tenant)
        ],
        **{
            name: [defs.resolve_job_def(name).execute_in_process(instance=instance)]
            for name in ("prune_episodes_job", "lancedb_optimize_job")
        },
    }
