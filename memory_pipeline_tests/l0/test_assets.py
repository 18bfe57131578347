"""The L0 index assets materialized for real (Dagster + LanceDB under tmp_path).

Proves: chunks land with exact line ranges and one vector each; a rerun embeds nothing and
duplicates nothing; an edited file's chunks are replaced and a deleted file's removed; every bad
input is skipped with a reason while the other files and tenants still index; asset checks pass.
"""

from __future__ import annotations

import os

import dagster as dg
import polars as pl
import pytest

from memory_pipeline.l0.assets import l0_assets
from memory_pipeline.l0.checks import ALL_CHECKS, CHECK_MANIFEST
from memory_pipeline.l0.store import ChunkIndex
from memory_pipeline.orchestration.partitions import TENANTS_PARTITION
from memory_pipeline.text.scrub import ScrubResult
from memory_pipeline_tests.helpers import make_resources, write

ALICE = "bot~alice"
GLOBAL = "bot~_global"

MEMORY_MD = """# Alice

Alice prefers concise answers and works in the Lisbon office.

## Projects

- Apollo: the billing migration, due in March.
- Hermes: the notification service.
"""

TRANSCRIPT = "\n".join(
    [
        '{"role": "user", "content": "I moved to Porto last week.", "ts": "2026-11-01T10:00:00Z", "turn_id": "t1"}',
        '{"role": "assistant", "content": "Noted, Porto it is.", "ts": "2026-11-01T10:00:30Z", "turn_id": "t2"}',
        '{"role": "user", "content": "Also remind me about the Apollo review.", "ts": "2026-11-01T10:01:00Z", "turn_id": "t3"}',
        '{"type": "session.completed", "ts": "2026-11-01T10:02:00Z"}',
    ]
)


def materialize(instance, root, lance_uri, *keys):
    known = set(instance.get_dynamic_partitions(TENANTS_PARTITION))
    instance.add_dynamic_partitions(TENANTS_PARTITION, [k for k in keys if k not in known])
    results = [
        dg.materialize(l0_assets, partition_key=key, instance=instance, resources=make_resources(root, lance_uri))
        for key in keys
    ]
    assert all(r.success for r in results)
    return results[-1]


def metadata(result, asset: str) -> dict:
    for event in result.get_asset_materialization_events():
        mat = event.step_materialization_data.materialization
        if mat.asset_key.to_user_string() == asset:
            return {k: v.value for k, v in mat.metadata.items()}
    raise AssertionError(f"no materialization of {asset}")


def checks(result) -> dict[str, bool]:
    return {
        e.asset_check_evaluation_data.check_name: e.asset_check_evaluation_data.passed
        for e in result.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION"
    }


def rows(lance_uri, tenant) -> pl.DataFrame:
    return ChunkIndex(lance_uri).chunk_rows(tenant).sort(["path", "start_line"])


def index_alice(root, lance_uri, settings):
    """One pass of the L0 pipeline functions over bot~alice, with the hash embedder: its batch."""
    from memory_pipeline.embedding import HashEmbedder
    from memory_pipeline.l0 import pipeline
    from memory_pipeline.tenancy import Tenant

    embedder = HashEmbedder()
    store = ChunkIndex(lance_uri, dim=embedder.dim)
    batch = pipeline.prepare_tenant(store, root, Tenant("bot", "alice"), settings, embedder.name)
    pipeline.embed_tenants([batch], embedder, store)
    pipeline.write_tenant(store, batch, embedder.name)
    return batch


@pytest.fixture
def workspace(root):
    write(root, "bot/users/alice/MEMORY.md", MEMORY_MD)
    write(root, "bot/users/alice/memory/2026-11-02.md", "# Daily\n\nCalled Dana about the Apollo budget.\n")
    write(root, "bot/sessions/alice/s1.jsonl", TRANSCRIPT)
    write(root, "bot/MEMORY.md", "# Bot\n\nRefunds within 30 days for annual plans.\n")
    return root


def test_index_rows_lines_and_checks(instance, workspace, lance_uri):
    result = materialize(instance, workspace, lance_uri, ALICE, GLOBAL)
    assert all(checks(result).values()) and len(checks(result)) == 4

    alice = rows(lance_uri, ALICE)
    assert set(alice["path"]) == {
        "bot/users/alice/MEMORY.md",
        "bot/users/alice/memory/2026-11-02.md",
        "bot/sessions/alice/s1.jsonl",
    }
    # Every Markdown chunk is exactly the file's lines start..end.
    memory_rows = alice.filter(pl.col("source") == "memory")
    assert memory_rows.height
    for row in memory_rows.iter_rows(named=True):
        lines = (workspace / row["path"]).read_text().splitlines()
        assert "\n".join(lines[row["start_line"] - 1 : row["end_line"]]) == row["text"]
        assert len(row["vector"]) == 64
    dated = alice.filter(pl.col("path").str.ends_with("2026-11-02.md"))
    assert dated["file_date"].to_list()[0].isoformat() == "2026-11-02"
    sessions = alice.filter(pl.col("source") == "sessions")
    assert sessions.height >= 1
    assert "t1" in sessions["turn_ids"].to_list()[0]
    assert "user (2026-11-01 10:00): I moved to Porto last week." in sessions["text"].to_list()[0]
    # The global tenant holds only its own file.
    assert rows(lance_uri, GLOBAL)["path"].unique().to_list() == ["bot/MEMORY.md"]


def test_rerun_embeds_nothing_and_duplicates_nothing(instance, workspace, lance_uri):
    materialize(instance, workspace, lance_uri, ALICE)
    before = rows(lance_uri, ALICE)
    result = materialize(instance, workspace, lance_uri, ALICE)
    assert metadata(result, "memory_chunks")["files_unchanged"] == 3
    assert metadata(result, "memory_embeddings")["embeddings_computed"] == 0
    after = rows(lance_uri, ALICE)
    assert after["id"].to_list() == before["id"].to_list()
    assert after["id"].n_unique() == after.height


def test_edit_and_delete(instance, workspace, lance_uri):
    materialize(instance, workspace, lance_uri, ALICE)
    write(workspace, "bot/users/alice/MEMORY.md", MEMORY_MD.replace("Lisbon", "Porto"))
    os.remove(workspace / "bot/users/alice/memory/2026-11-02.md")
    result = materialize(instance, workspace, lance_uri, ALICE)
    meta = metadata(result, "memory_chunks")
    assert (meta["files_changed"], meta["files_deleted"], meta["files_unchanged"]) == (1, 1, 1)
    alice = rows(lance_uri, ALICE)
    text = "\n".join(alice["text"])
    assert "Porto office" in text and "Lisbon office" not in text
    assert not alice["path"].str.ends_with("2026-11-02.md").any()
    assert all(checks(result).values())
    manifest = ChunkIndex(lance_uri).manifest(ALICE)
    assert "bot/users/alice/memory/2026-11-02.md" not in manifest["path"].to_list()


def test_bad_inputs_are_skipped_with_reasons(instance, workspace, lance_uri, tmp_path):
    write(workspace, "bot/users/alice/memory/latin1.md", "caf\xe9 au lait".encode("latin-1"))
    write(workspace, "bot/users/alice/memory/binary.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    write(workspace, "bot/users/alice/memory/empty.md", "")
    write(workspace, "bot/users/alice/memory/huge.md", ("word " * 200 + "\n\n") * 20_000)  # ~20 MB
    write(workspace, "bot/users/alice/memory/notes.txt", "not markdown")
    write(workspace, "bot/sessions/alice/broken.jsonl", TRANSCRIPT + '\n{"role": "user", "content": "half a li')
    outside = tmp_path / "secret.md"
    outside.write_text("# Outside\n\nmust never be indexed\n")
    os.symlink(outside, workspace / "bot/users/alice/memory/escape.md")

    result = materialize(instance, workspace, lance_uri, ALICE)
    meta = metadata(result, "memory_chunks")
    skipped = meta["skipped"]
    assert "not UTF-8" in skipped and "latin1.md" in skipped
    assert "binary" in skipped and "binary.md" in skipped
    assert "huge.md" in skipped and "MB limit" in skipped
    assert "escape.md" in skipped and "outside the workspace root" in skipped
    assert "broken.jsonl" in skipped and "line 5" in skipped
    alice = rows(lance_uri, ALICE)
    assert "must never be indexed" not in "\n".join(alice["text"])
    # The good files, and the good lines of the broken transcript, are indexed.
    assert {"bot/users/alice/MEMORY.md", "bot/sessions/alice/broken.jsonl"} <= set(alice["path"])
    manifest = ChunkIndex(lance_uri).manifest(ALICE)
    status = dict(zip(manifest["path"], manifest["status"]))
    assert status["bot/users/alice/memory/notes.txt"] == "recorded"
    assert status["bot/users/alice/memory/empty.md"] == "indexed"
    assert status["bot/users/alice/memory/latin1.md"] == "skipped"
    assert all(checks(result).values())


def test_a_tenant_failing_in_a_multi_tenant_run_is_materialized_by_no_asset(instance, workspace, lance_uri, monkeypatch):
    """A tenant that fails on an unexpected error is materialized by none of the three L0 assets;
    the other tenant of the run is indexed and materialized by all three, and the step fails naming
    the failed one."""
    import memory_pipeline.l0.assets as l0
    from memory_pipeline.orchestration.runs import RANGE_END_TAG, RANGE_START_TAG

    real = l0.prepare_tenant

    def prepare(store, root, tenant, *args):
        if tenant.key == GLOBAL:
            raise OSError("disk went away")
        return real(store, root, tenant, *args)

    monkeypatch.setattr(l0, "prepare_tenant", prepare)
    instance.add_dynamic_partitions(TENANTS_PARTITION, [ALICE, GLOBAL])
    defs = dg.Definitions(assets=l0_assets, jobs=[l0.l0_index_job], resources=make_resources(workspace, lance_uri))
    result = defs.resolve_job_def("l0_index_job").execute_in_process(
        instance=instance, tags={RANGE_START_TAG: ALICE, RANGE_END_TAG: GLOBAL}, raise_on_error=False
    )
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert f"{GLOBAL}: its files could not be prepared: OSError: disk went away" in failure.step_failure_data.user_failure_data.description
    for asset in ("memory_chunks", "memory_embeddings", "memory_index"):
        assert instance.get_materialized_partitions(dg.AssetKey(asset)) == {ALICE}, asset
    assert rows(lance_uri, ALICE).height and not rows(lance_uri, GLOBAL).height
    latest = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey("memory_chunks"), asset_partitions=[ALICE]), limit=1).records[0]
    assert latest.asset_materialization.metadata["chunks_prepared"].value == rows(lance_uri, ALICE).height


def test_multi_tenant_single_run(instance, workspace, lance_uri):
    """A backfill over a range of tenants runs once, indexes each tenant separately and reports
    each tenant's own figures and checks on its partition."""
    instance.add_dynamic_partitions(TENANTS_PARTITION, [ALICE, GLOBAL])
    from memory_pipeline.l0.assets import l0_index_job
    from memory_pipeline.orchestration.runs import RANGE_END_TAG, RANGE_START_TAG

    defs = dg.Definitions(assets=l0_assets, jobs=[l0_index_job], resources=make_resources(workspace, lance_uri))
    result = defs.resolve_job_def("l0_index_job").execute_in_process(
        instance=instance, tags={RANGE_START_TAG: ALICE, RANGE_END_TAG: GLOBAL}
    )
    assert result.success
    [run_wide] = [e.asset_observation_data.asset_observation.metadata for e in result.get_asset_observation_events()
                  if e.asset_key == dg.AssetKey("memory_chunks")]
    assert run_wide["partitions"].value == 2
    assert rows(lance_uri, ALICE).height and rows(lance_uri, GLOBAL).height
    # Each partition's latest materialization carries its own figures, not the run's totals.
    for asset, figure in (("memory_chunks", "chunks_prepared"), ("memory_index", "dagster/row_count")):
        latest = {
            key: instance.fetch_materializations(
                dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[key]), limit=1
            ).records[0].asset_materialization.metadata[figure].value
            for key in (ALICE, GLOBAL)
        }
        assert latest == {ALICE: rows(lance_uri, ALICE).height, GLOBAL: rows(lance_uri, GLOBAL).height}, asset
        assert latest[ALICE] != latest[GLOBAL]
    evaluations = [e.asset_check_evaluation_data for e in result.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"]
    assert {(e.check_name, e.partition) for e in evaluations if e.partition} == {
        (name, key) for name in ALL_CHECKS for key in (ALICE, GLOBAL)
    }


def test_same_text_in_another_tenant_is_not_embedded_again(instance, root, lance_uri):
    note = "# Shared\n\nThe staging cluster restarts every Sunday at 02:00 UTC.\n"
    write(root, "bot/users/alice/memory/ops.md", note)
    write(root, "bot/users/bob/memory/ops.md", note)
    first = materialize(instance, root, lance_uri, "bot~alice")
    assert metadata(first, "memory_embeddings")["embeddings_computed"] == 1
    second = materialize(instance, root, lance_uri, "bot~bob")
    meta = metadata(second, "memory_embeddings")
    assert (meta["embeddings_computed"], meta["cache_hits"]) == (0, 1)
    # Each tenant still has its own row, and only its own.
    assert rows(lance_uri, "bot~bob")["path"].to_list() == ["bot/users/bob/memory/ops.md"]


def test_changed_chunking_settings_reindex_unchanged_files(workspace, lance_uri):
    """A file is unchanged only if its bytes and the index signature (model, chunking) match."""
    from memory_pipeline.config import Settings

    def run(settings):
        return index_alice(workspace, lance_uri, settings)

    run(Settings(session_window_turns=1, session_window_stride=1))
    assert run(Settings(session_window_turns=1, session_window_stride=1)).stats["files_unchanged"] == 3
    again = run(Settings(session_window_turns=3, session_window_stride=2))
    assert again.stats["files_changed"] == 3
    sessions = rows(lance_uri, ALICE).filter(pl.col("source") == "sessions")
    assert sessions.height == 1 and sessions["turn_ids"].to_list()[0] == ["t1", "t2", "t3"]


def test_a_newer_scrubber_reindexes_unchanged_files_and_removes_what_it_finds(workspace, lance_uri, monkeypatch):
    """An upgrade whose scrubber finds more re-reads every file, so a secret an earlier version
    indexed leaves the index at the next run, though no file changed."""
    from memory_pipeline.config import Settings
    from memory_pipeline.l0 import pipeline

    secret = "Veryold-Secret-77"
    write(workspace, "bot/users/alice/memory/wifi.md", f"# Wifi\n\nThe code word of the router: {secret}\n")
    # The scrubber of this imagined earlier version let the value through.
    monkeypatch.setattr(pipeline, "SCRUB_VERSION", pipeline.SCRUB_VERSION - 1)
    monkeypatch.setattr(pipeline, "scrub_secrets", lambda text: ScrubResult(text, {}))
    index_alice(workspace, lance_uri, Settings())
    assert any(secret in t for t in rows(lance_uri, ALICE)["text"])
    monkeypatch.undo()
    monkeypatch.setattr(pipeline, "scrub_secrets", lambda text: ScrubResult(text.replace(secret, "[REDACTED:x]"), {"x": 1}))
    again = index_alice(workspace, lance_uri, Settings())
    assert (again.stats["files_changed"], again.stats["files_unchanged"]) == (4, 0)
    texts = rows(lance_uri, ALICE)["text"].to_list()
    assert not any(secret in t for t in texts) and any("[REDACTED:x]" in t for t in texts)


def test_a_corrupted_index_fails_its_check_and_the_next_run_repairs_it(instance, workspace, lance_uri):
    materialize(instance, workspace, lance_uri, ALICE)
    before = rows(lance_uri, ALICE)
    victim = before.filter(pl.col("path").str.ends_with("MEMORY.md")).row(0, named=True)
    ChunkIndex(lance_uri).chunks().delete(f"id = '{victim['id']}'")

    resources = make_resources(workspace, lance_uri)
    failed = dg.materialize(l0_assets, partition_key=ALICE, instance=instance, resources=resources, raise_on_error=False)
    assert not failed.success  # the check blocks: the run fails instead of passing as unchanged
    evaluation = next(
        e.asset_check_evaluation_data for e in failed.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION" and e.asset_check_evaluation_data.check_name == CHECK_MANIFEST
    )
    assert (evaluation.passed, evaluation.partition) == (False, ALICE)
    assert evaluation.metadata["files_to_reindex"].value == ["bot/users/alice/MEMORY.md"]

    repaired = dg.materialize(l0_assets, partition_key=ALICE, instance=instance, resources=resources)
    assert (metadata(repaired, "memory_chunks")["files_new"], metadata(repaired, "memory_chunks")["files_unchanged"]) == (1, 2)
    assert all(checks(repaired).values())
    assert rows(lance_uri, ALICE).drop("updated_at").equals(before.drop("updated_at"))
