"""Proves: an asset's checks run on their own, on what is stored, without materializing it again
(the UI's "Execute" on a check): on the real L0 assets after a run over two tenants, a damaged
tenant's check fails and the other's passes, in a run of one partition and in a run of both,
each evaluation on its partition's latest materialization, and no new materialization is made.
"""

from __future__ import annotations

import dagster as dg

from memory_pipeline.l0.assets import l0_assets, l0_index_job
from memory_pipeline.l0.checks import CHECK_MANIFEST
from memory_pipeline.l0.store import ChunkIndex
from memory_pipeline.orchestration.io_manager import PartitionedPickleIOManager
from memory_pipeline.orchestration.resources import EmbedderResource, LanceDBResource, WorkspaceResource
from memory_pipeline.orchestration.runs import range_tags, run_partitioned_job
from memory_pipeline_tests.helpers import write

ALICE, BOB = "support-bot~alice", "support-bot~bob"
MANIFEST = dg.AssetCheckKey(dg.AssetKey("memory_index"), CHECK_MANIFEST)


def statuses(instance) -> dict[str, str]:
    """{partition: status} of the check as the UI's Checks -> Partitions reads it."""
    return {
        info.partition_key: info.latest_execution_status.value
        for info in instance.event_log_storage.get_asset_check_partition_info([MANIFEST])
        if info.partition_key is not None and info.is_current
    }


def materializations(instance) -> int:
    return len(instance.fetch_materializations(dg.AssetKey("memory_index"), limit=100).records)


def test_a_check_runs_alone_on_what_is_stored(tmp_path):
    root, uri = tmp_path / "agents", str(tmp_path / "lancedb")
    write(root, "support-bot/users/alice/MEMORY.md", "# Alice\n\nAlice drinks green tea at four.\n")
    write(root, "support-bot/users/bob/MEMORY.md", "# Bob\n\nBob drinks black coffee at nine.\n")
    defs = dg.Definitions(assets=l0_assets, jobs=[l0_index_job], resources={
        "io_manager": PartitionedPickleIOManager(base_dir=str(tmp_path / "io")),
        "workspace": WorkspaceResource(root=str(root)), "lancedb": LanceDBResource(uri=uri),
        "embedder": EmbedderResource(kind="hash")})
    checks_alone = defs.resolve_implicit_global_asset_job_def().get_subset(
        asset_selection=set(), asset_check_selection={MANIFEST})
    with dg.instance_for_test() as instance:
        assert run_partitioned_job(defs, "l0_index_job", instance, [ALICE, BOB]).success
        made = materializations(instance)
        assert made == 2 and statuses(instance) == {ALICE: "SUCCEEDED", BOB: "SUCCEEDED"}

        # Bob's rows go missing behind the pipeline's back: his manifest still lists his file.
        ChunkIndex(uri, dim=EmbedderResource(kind="hash").dim).chunks().delete(f"tenant = '{BOB}'")
        alone = checks_alone.execute_in_process(instance=instance, partition_key=BOB, raise_on_error=False)
        assert not alone.success  # a blocking check failed
        assert statuses(instance) == {ALICE: "SUCCEEDED", BOB: "FAILED"}
        evaluation = [e for e in alone.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"]
        assert len(evaluation) == 1 and evaluation[0].event_specific_data.target_materialization_data is not None

        # Both at once, one run: each partition its own evaluation.
        both = checks_alone.execute_in_process(instance=instance, tags=range_tags(ALICE, BOB), raise_on_error=False)
        partitions = sorted(e.event_specific_data.partition for e in both.all_events
                            if e.event_type_value == "ASSET_CHECK_EVALUATION" and e.event_specific_data.partition)
        assert partitions == [ALICE, BOB]
        assert statuses(instance) == {ALICE: "SUCCEEDED", BOB: "FAILED"}
        assert materializations(instance) == made  # nothing materialized again
