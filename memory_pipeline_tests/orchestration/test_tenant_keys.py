"""Proves: a partition key that names no tenant of the workspace is refused when an L0 or a
consolidation run starts, with nothing materialized and one line naming what is wrong and the
known tenants, and is listed and removed by ``memory-pipeline partitions --prune``, which with
``--register`` adds the workspace's tenants to a fresh instance; a tenant whose folder is gone but
whose rows are still stored may still run (that run removes them) and is not pruned until they
are gone.
"""

from __future__ import annotations

import json

import dagster as dg
import pytest
from typer.testing import CliRunner

from memory_pipeline.config import get_settings
from memory_pipeline.l0.assets import l0_assets, l0_index_job
from memory_pipeline.orchestration.partitions import SESSION_TENANTS_PARTITION, TENANTS_PARTITION
from memory_pipeline.orchestration.runs import range_tags
from memory_pipeline.orchestration.tenant_keys import require_known_tenants, stale_partitions
from memory_pipeline_tests.cli_env import cli_app
from memory_pipeline_tests.helpers import make_resources, write


@pytest.fixture
def workspace(root):
    write(root, "bot/MEMORY.md", "# Bot\n\nThe bot answers in English.\n")
    write(root, "bot/users/alice/MEMORY.md", "# Alice\n\nAlice lives in Porto.\n")
    return root


def test_unknown_keys_fail_with_the_known_tenants(workspace):
    with pytest.raises(dg.Failure) as failure:
        require_known_tenants(workspace, ["bot~alice", "bot~zed", "nobody"])
    assert failure.value.description == (
        "2 partition(s) name no tenant of the workspace: "
        "bot~zed: unknown user 'zed' of agent 'bot': known users: _global, alice "
        "(a user is added by creating bot/users/zed/ under the workspace root); "
        "nobody: invalid tenant partition key 'nobody': expected '<agent>~<user>'; "
        "remove stale partitions with 'memory-pipeline partitions --prune'"
    )
    require_known_tenants(workspace, ["bot~zed"], still_stored=lambda key: key == "bot~zed")  # its rows go in that run
    with pytest.raises(dg.Failure):
        require_known_tenants(workspace, ["nobody"], still_stored=lambda key: True)  # never a tenant


def test_a_run_with_a_bad_key_materializes_nothing(instance, workspace, lance_uri):
    keys = ["bot~_global", "bot~alice", "bot~zed"]
    instance.add_dynamic_partitions(TENANTS_PARTITION, keys)
    job = dg.Definitions(assets=l0_assets, jobs=[l0_index_job], resources=make_resources(workspace, lance_uri)).resolve_job_def(
        "l0_index_job"
    )
    result = job.execute_in_process(instance=instance, tags=range_tags(keys[0], keys[-1]), raise_on_error=False)
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert failure.step_key == "l0_index"
    assert failure.step_failure_data.user_failure_data.description.startswith("1 partition(s) name no tenant of the workspace: bot~zed:")
    assert result.get_asset_materialization_events() == []


def test_a_consolidation_run_for_an_unknown_tenant_materializes_nothing(instance, workspace, lance_uri):
    from memory_pipeline.consolidation.assets import consolidation_assets

    instance.add_dynamic_partitions(SESSION_TENANTS_PARTITION, ["bot~zed"])
    result = dg.materialize(
        consolidation_assets, instance=instance, resources=make_resources(workspace, lance_uri),
        partition_key="bot~zed", raise_on_error=False,
    )
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert (failure.step_key, failure.step_failure_data.user_failure_data.description.split(": ")[0]) == (
        "episodic_summaries", "1 partition(s) name no tenant of the workspace"
    )
    assert result.get_asset_materialization_events() == []


def test_partitions_command_lists_and_prunes(monkeypatch, instance, workspace, lance_uri, tmp_path):
    home = tmp_path / "dagster_home"
    app = cli_app(monkeypatch, workspace, lance_uri, home, dg.Definitions(assets=l0_assets, resources=make_resources(workspace, lance_uri)))
    try:
        from memory_pipeline.orchestration.runs import local_instance

        mine = local_instance(home)
        mine.add_dynamic_partitions(TENANTS_PARTITION, ["bot~_global", "bot~alice", "bot~zed", "nobody"])
        mine.add_dynamic_partitions(SESSION_TENANTS_PARTITION, ["bot~alice", "gone~bob"])
        listed = CliRunner().invoke(app, ["partitions", "--json"])
        assert listed.exit_code == 0, listed.output
        assert [(r["partitions"], r["key"]) for r in json.loads(listed.stdout)["stale"]] == [
            (TENANTS_PARTITION, "bot~zed"), (TENANTS_PARTITION, "nobody"), (SESSION_TENANTS_PARTITION, "gone~bob")
        ]
        still_stored = stale_partitions(mine, workspace, still_stored=lambda key: key == "bot~zed")
        assert sorted(still_stored[TENANTS_PARTITION]) == ["nobody"]
        pruned = CliRunner().invoke(app, ["partitions", "--prune", "--json"])
        assert pruned.exit_code == 0, pruned.output
        assert json.loads(pruned.stdout)["removed"] == 3
        assert (mine.get_dynamic_partitions(TENANTS_PARTITION), mine.get_dynamic_partitions(SESSION_TENANTS_PARTITION)) == (
            ["bot~_global", "bot~alice"], ["bot~alice"]
        )
        assert stale_partitions(mine, workspace) == {}
        write(workspace, "bot/sessions/carol/s1.jsonl", '{"role": "user", "content": "hi"}\n')
        registered = CliRunner().invoke(app, ["partitions", "--register", "--json"])
        assert registered.exit_code == 0, registered.output
        assert json.loads(registered.stdout)["registered"] == {TENANTS_PARTITION: ["bot~carol"], SESSION_TENANTS_PARTITION: ["bot~carol"]}
        assert mine.get_dynamic_partitions(TENANTS_PARTITION) == ["bot~_global", "bot~alice", "bot~carol"]
    finally:
        get_settings.cache_clear()
