"""Right to be forgotten: after ``forget_tenant`` a user (or a whole agent) has no row left in any
LanceDB table, no byte of their text left in the LanceDB folder (old versions and indices
included), no file the pipeline wrote for them, no partition and no run in the Dagster instance;
every other tenant's memory is exactly as before and the pipeline keeps working on it.

It runs on a copy of the workspace every stage has been through (``leaky`` in conftest.py), and
finds the user's text by a word only that user ever said: the same byte scan finds the other
users' words afterwards, which proves the scan sees stored text.
"""

from __future__ import annotations

import shutil

import dagster as dg
import pyarrow.compute as pc
import pytest
from typer.testing import CliRunner

from memory_pipeline.cli import app as cli_group
from memory_pipeline.config import get_settings
from memory_pipeline.embedding import HashEmbedder
from memory_pipeline.forget import forget_tenant
from memory_pipeline.l0.store import ChunkIndex
from memory_pipeline.memories import context_file
from memory_pipeline.memories.service import MemoryService
from memory_pipeline.orchestration.partitions import TENANTS_PARTITION
from memory_pipeline.orchestration.runs import run_partitioned_job
from memory_pipeline.recall.search import search
from memory_pipeline.tenancy import InvalidTenantError
from memory_pipeline_tests.helpers.hardening import USER_WORDS, files_containing, pipeline_defs

pytestmark = pytest.mark.slow

BOB = "ops-bot~bob"


@pytest.fixture
def copy(leaky_copy):
    base = leaky_copy
    with dg.instance_for_test(temp_dir=str(base / "dagster")) as instance:
        yield base, base / "agents", str(base / "lancedb"), instance


@pytest.fixture(scope="module")
def refusing(leaky, in_memory):
    """One copy for every refused call: each test compares the tables before and after its call."""
    base = in_memory / "refusing"
    shutil.copytree(leaky[0], base)
    yield base / "agents", str(base / "lancedb")
    shutil.rmtree(base, ignore_errors=True)


def tenant_counts(lance_uri: str) -> dict[str, dict[str, int]]:
    """{table: {tenant: rows}} for every table with a tenant column."""
    store = ChunkIndex(lance_uri)
    out = {}
    for name in store.table_names():
        table = store.db.open_table(name)
        if "tenant" in table.schema.names:
            column = table.search().select(["tenant"]).limit(None).to_arrow().column("tenant")
            counts = pc.value_counts(column).to_pylist()
            out[name] = {c["values"]: c["counts"] for c in counts}
    return out


def test_forgetting_a_user_leaves_nothing_of_them(copy):
    base, root, lance_uri, instance = copy
    before = tenant_counts(lance_uri)
    held = {t for t, c in before.items() if c.get(BOB)}
    assert {"chunks", "files", "episodes", "memories", "memory_audit", "memory_sources"} <= held
    assert files_containing(base / "lancedb", {"bob": USER_WORDS["bob"]})
    assert BOB in instance.get_dynamic_partitions(TENANTS_PARTITION)
    bob_dreamed = list((root / "ops-bot/users/bob/memory/_system/dreaming").glob("*.md"))
    alice_dreamed = list((root / "ops-bot/users/alice/memory/_system/dreaming").glob("*.md"))
    assert bob_dreamed and alice_dreamed
    # Bob's working memory, as an agent loads it every cycle, is kept beside recall's files.
    settings = get_settings().model_copy(update={"root": str(root), "lancedb_uri": lance_uri})
    MemoryService("ops-bot", "bob", settings=settings, embedder=HashEmbedder()).context()
    bob_context = context_file.path(lance_uri, BOB)
    assert bob_context.is_file()

    report = forget_tenant("ops-bot", "bob", root=root, lancedb_uri=lance_uri, io_dir=base / "io", instance=instance)

    after = tenant_counts(lance_uri)
    assert after
    for table, counts in after.items():
        expected = {t: n for t, n in before.get(table, {}).items() if t != BOB}
        if table == "memory_audit":
            assert counts.pop(BOB) == 1  # only: forgotten, when, by whom
        assert counts == expected, table
    audit = ChunkIndex(lance_uri).db.open_table("memory_audit").search().where(f"tenant = '{BOB}'").to_list()
    assert [(a["op"], a["memory_id"]) for a in audit] == [("forget", "*")]
    assert report.rows_deleted["chunks"] == before["chunks"][BOB]
    assert report.cache_rows_deleted > 0

    # The bytes: nothing of Bob in the LanceDB folder, the IO hand-offs or the instance's storage.
    assert files_containing(base, {"bob": USER_WORDS["bob"]}, skip=root) == {}
    assert files_containing(base / "lancedb", {"path": "ops-bot/users/bob", "sessions": "ops-bot/sessions/bob"}) == {}
    others = files_containing(base / "lancedb", {w: w for u, w in USER_WORDS.items() if u != "bob"})
    assert set(others) == {USER_WORDS["alice"], USER_WORDS["carol"]}

    # Files: the dreamed one goes, what people wrote stays (and is reported), Alice's stays.
    assert not any(p.exists() for p in bob_dreamed) and all(p.exists() for p in alice_dreamed)
    assert (root / "ops-bot/users/bob/MEMORY.md").exists()
    assert "ops-bot/users/bob/MEMORY.md" in report.sources_left
    assert not (root / "ops-bot/users/bob/memory/_system").exists()
    assert not list((base / "io").rglob(f"*{BOB}*"))
    assert not bob_context.parent.exists()

    # The instance: no partition, no run that materialized Bob.
    assert BOB not in instance.get_dynamic_partitions(TENANTS_PARTITION)
    assert report.runs_deleted > 0
    for record in instance.get_run_records():
        assert BOB not in record.dagster_run.tags.values()

    # Recall: nothing for Bob; Alice is served as before, full-text index included.
    bob_hits = search(USER_WORDS["bob"], "ops-bot", "bob", store=lance_uri, embedder=HashEmbedder(), min_score=0.0)
    assert {h.tenant for h in bob_hits} <= {"ops-bot~_global"}  # the agent-wide memory stays readable
    hits = search(USER_WORDS["alice"], "ops-bot", "alice", store=lance_uri, embedder=HashEmbedder(), min_score=0.0)
    assert hits and hits[0].parts["text"] > 0

    # Forgetting again finds nothing and fails nothing; the pipeline keeps working afterwards.
    again = forget_tenant("ops-bot", "bob", root=root, lancedb_uri=lance_uri, instance=instance)
    assert not any(again.rows_deleted.get(t) for t in ("chunks", "episodes", "memories"))
    defs = pipeline_defs(root, lance_uri)
    result = run_partitioned_job(defs, "l0_index_job", instance, ["ops-bot~alice"])
    checks = [e for e in result.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"]
    assert checks and all(e.event_specific_data.passed for e in checks)


def test_forgetting_an_agent_takes_every_user_and_its_sources_on_request(copy):
    base, root, lance_uri, instance = copy
    before = tenant_counts(lance_uri)
    report = forget_tenant(
        "crm-bot", root=root, lancedb_uri=lance_uri, io_dir=base / "io", instance=instance, delete_sources=True
    )
    assert report.tenants == ["crm-bot~carol"]
    after = tenant_counts(lance_uri)
    assert after
    for table, counts in after.items():
        assert not {t for t in counts if t.startswith("crm-bot~") and table != "memory_audit"}
        assert {t: n for t, n in counts.items() if not t.startswith("crm-bot~")} == {
            t: n for t, n in before.get(table, {}).items() if not t.startswith("crm-bot~")
        }
    assert not (root / "crm-bot").exists() and report.sources_deleted
    assert files_containing(base, {"carol": USER_WORDS["carol"]}) == {}


@pytest.mark.parametrize("agent,user", [("..", None), ("ops-bot", "../alice"), ("ops-bot", ""), ("", "bob"),
                                        ("a/b", None), ("ops-bot", "b" * 300), ("ops-bot", "bøb")])
def test_crafted_ids_are_refused(refusing, agent, user):
    root, lance_uri = refusing
    before = tenant_counts(lance_uri)
    with pytest.raises(InvalidTenantError, match="invalid"):
        forget_tenant(agent, user, root=root, lancedb_uri=lance_uri)
    assert tenant_counts(lance_uri) == before


def test_cli_needs_yes_and_refuses_bad_ids(copy, monkeypatch):
    base, root, lance_uri, _ = copy
    monkeypatch.setenv("MEMORY_PIPELINE_ROOT", str(root))
    monkeypatch.setenv("MEMORY_PIPELINE_LANCEDB_URI", lance_uri)
    monkeypatch.setenv("DAGSTER_HOME", str(base / "dagster"))
    get_settings.cache_clear()
    app = cli_group
    runner = CliRunner()
    try:
        refused = runner.invoke(app, ["forget-tenant", "--agent", "ops-bot", "--user", "bob"])
        assert refused.exit_code == 2 and "--yes" in refused.output
        bad = runner.invoke(app, ["forget-tenant", "--agent", "..", "--yes"])
        assert bad.exit_code == 2 and "invalid agent id" in bad.output
        # User ids are case-sensitive: "Bob" is no one, and forgetting no one is an error, not a success.
        unknown = runner.invoke(app, ["forget-tenant", "--agent", "ops-bot", "--user", "Bob", "--yes"])
        assert unknown.exit_code == 2, unknown.output
        assert "unknown user 'Bob' of agent 'ops-bot' (user ids are case-sensitive): known users: " in unknown.output
        assert "_global, alice, bob" in unknown.output and "forgot" not in unknown.output
        assert BOB in tenant_counts(lance_uri)["chunks"]
        done = runner.invoke(app, ["forget-tenant", "--agent", "ops-bot", "--user", "bob", "--yes", "--json"])
        assert done.exit_code == 0, done.output
        assert '"ops-bot~bob"' in done.output
    finally:
        get_settings.cache_clear()
    assert BOB not in tenant_counts(lance_uri)["chunks"]


def _materializations(instance, partition: str) -> dict[str, int]:
    """{run id: materialization records of ``partition``} over every asset of the instance."""
    counts: dict[str, int] = {}
    for key in instance.get_asset_keys():
        for record in instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=key, asset_partitions=[partition]), limit=1000
        ).records:
            counts[record.run_id] = counts.get(record.run_id, 0) + 1
    return counts


def test_a_run_shared_by_two_tenants_keeps_the_other_tenants_records(copy):
    base, root, lance_uri, instance = copy
    alice_before, bob_before = _materializations(instance, "ops-bot~alice"), _materializations(instance, BOB)
    shared = set(alice_before) & set(bob_before)  # the L0, dreaming and typed-memory runs over all tenants
    assert shared and all(bob_before[r] > 0 for r in shared)
    assert all((base / "dagster" / "storage" / r / "compute_logs").is_dir() for r in shared)

    report = forget_tenant("ops-bot", "bob", root=root, lancedb_uri=lance_uri, io_dir=base / "io", instance=instance)

    assert report.runs_split == len(shared) and report.events_deleted >= sum(bob_before[r] for r in shared)
    # Bob's own runs go whole (his dreaming run, any run of him alone); the consolidation run over
    # every tenant with sessions is shared, a range of session tenants.
    assert report.runs_deleted >= len(set(bob_before) - shared) and report.runs_deleted > 0
    assert _materializations(instance, "ops-bot~alice") == alice_before  # every record of Alice stays
    assert _materializations(instance, BOB) == {}
    kept = {r.dagster_run.run_id for r in instance.get_run_records()}
    assert shared <= kept
    # What the shared runs could not split is gone: their captured output and Bob's words.
    assert report.compute_logs_deleted >= len(shared)
    assert not any((base / "dagster" / "storage" / r / "compute_logs").exists() for r in shared)
    assert files_containing(base / "dagster", {"bob": USER_WORDS["bob"], "key": BOB}) == {}
    assert files_containing(base / "dagster", {"alice": "ops-bot~alice"})  # the scan sees the instance

