"""The dreaming asset reports in its materialization metadata how many secrets it scrubbed, per
tenant partition, as the L0 and episode assets do: the UI plots the count across runs, so a
person sees a credential being said to the agent without reading the files. A second run that
adds no line counts nothing; a run over two tenants gives each partition its own count (the run's
summary adds them up), and the check finds no secret in either dreamed file."""

import dagster as dg

from memory_pipeline.consolidation.assets import episodic_summaries
from memory_pipeline.consolidation.notes_assets import dreaming
from memory_pipeline.orchestration.runs import materialization_metadata
from memory_pipeline.tenancy import Tenant
from memory_pipeline_tests.helpers import make_resources, write
from memory_pipeline_tests.helpers.consolidation import consolidate, jsonl, metadata, run_dreaming, say

TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
PASSWORD = "hunter2secretpass"
ANN, BEN = Tenant("bot", "ann"), Tenant("bot", "ben")


def _sessions(root, lance_uri, instance, tenants) -> None:
    for tenant in tenants:
        write(root, f"bot/sessions/{tenant.user_id}/s1.jsonl", jsonl(
            say("user", f"I prefer that deploys use my token {TOKEN} in the header.", "2026-10-01T09:00:00Z"),
            say("user", f"We decided to point staging at postgres://admin:{PASSWORD}@db.internal:5432/app for now.",
                "2026-10-01T09:01:00Z"),
            say("user", "I prefer short answers with code samples.", "2026-10-01T09:02:00Z"),
            completed="2026-10-01T09:05:00Z",
        ))
        consolidate(instance, make_resources(root, lance_uri), "2026-10-01", tenant=tenant.key, assets=[episodic_summaries])


def _dreamed_text(root, tenant: Tenant) -> str:
    folder = root / "bot/users" / tenant.user_id / "memory/_system/dreaming"
    return "\n".join(p.read_text() for p in sorted(folder.glob("*.md")))


def test_dreaming_metadata_counts_the_secrets_it_scrubbed(root, lance_uri, instance):
    _sessions(root, lance_uri, instance, [ANN])
    resources = make_resources(root, lance_uri)

    first = metadata(run_dreaming(instance, resources, ANN.key), "dreaming")
    text = _dreamed_text(root, ANN)
    assert TOKEN not in text and PASSWORD not in text and "[REDACTED:" in text
    assert (first["files_written"], first["secrets_redacted"]) == (1, 2)

    again = metadata(run_dreaming(instance, resources, ANN.key), "dreaming")
    assert (again["episodes_promoted"], again["secrets_redacted"]) == (0, 0)


def test_one_run_over_two_tenants_reports_each_tenant(root, lance_uri, instance):
    _sessions(root, lance_uri, instance, [ANN, BEN])
    result = dg.materialize(
        [dreaming], instance=instance, resources=make_resources(root, lance_uri),
        tags={"dagster/asset_partition_range_start": ANN.key, "dagster/asset_partition_range_end": BEN.key},
    )
    for tenant in (ANN, BEN):
        latest = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey("dreaming"), asset_partitions=[tenant.key]), limit=1
        ).records[0].asset_materialization.metadata
        assert (latest["files_written"].value, latest["secrets_redacted"].value) == (1, 2)
    summary = materialization_metadata(result)["dreaming"]
    assert (summary["files_written"], summary["secrets_redacted"]) == (2, 4)
    checks = [e.asset_check_evaluation_data for e in result.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"]
    assert {(c.partition, c.passed) for c in checks if c.partition} == {(ANN.key, True), (BEN.key, True)}
    assert all(TOKEN not in _dreamed_text(root, t) for t in (ANN, BEN))
