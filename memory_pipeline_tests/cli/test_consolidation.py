"""Proves: the ``consolidate`` and ``dream`` commands work as a user runs them on the sample
workspace. ``consolidate`` launches one run over every tenant it consolidates (neighbours among
the partitions), consolidates only the days asked for and, by default, only sessions not
consolidated yet (``--again``: all of them, to the same rows); its summary adds each asset's
figures up over the runs and the tenants and leaves timings and flags out; ``dream`` keeps the sensor's rules (5 unpromoted
episodes, 10 minutes between a tenant's runs) unless ``--force``, says why a tenant waits without
loading Dagster, reports what the dreaming run promoted and wrote, and indexes the dreamed document
so a search finds it at once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest

from memory_pipeline.config import get_settings
from memory_pipeline.consolidation.assets import consolidation_assets, consolidation_job
from memory_pipeline.consolidation.launch import plan_dreams
from memory_pipeline.consolidation.notes_assets import dreaming, dreaming_job
from memory_pipeline.l0.assets import l0_assets, l0_index_job
from memory_pipeline_tests.cli_env import cli_app, run
from memory_pipeline_tests.helpers import REPO, make_resources
from memory_pipeline_tests.helpers.consolidation import ALICE, store_for

pytestmark = pytest.mark.slow

DAYS = ("2026-10-26", "2026-10-30")
WHO = ("--agent", ALICE.split("~")[0], "--user", ALICE.split("~")[1])


@pytest.fixture
def dagster_home(in_memory_path):
    """On tmpfs: a run stores a few dozen events per tenant, each a commit."""
    return in_memory_path / "dagster_home"


@pytest.fixture
def app(sample_root, lance_uri, dagster_home, monkeypatch):
    defs = dg.Definitions(
        assets=[*l0_assets, *consolidation_assets, dreaming], jobs=[l0_index_job, consolidation_job, dreaming_job],
        resources=make_resources(sample_root, lance_uri),
    )
    yield cli_app(monkeypatch, sample_root, lance_uri, dagster_home, defs)
    get_settings.cache_clear()


def test_consolidate_adds_figures_up_over_runs_then_dream_reports_the_promotion(app, lance_uri, sample_root, dagster_home):
    days = [arg for day in DAYS for arg in ("--day", day)]
    summary = json.loads(run(app, "consolidate", *WHO, *days, "--json"))

    assert summary["ranges"] == [ALICE] and len(summary["runs"]) == 1
    assert set(summary["assets"]) == {"episodic_summaries", "semantic_graph", "entity_dedup"}
    episodes = summary["assets"]["episodic_summaries"]
    # Two days of one completed session each: the totals are of both partitions, not of the last.
    assert episodes["sessions_complete"] == 2
    assert episodes["episodes_inserted"] == store_for(lance_uri).episode_rows(ALICE).height == 2
    assert summary["assets"]["semantic_graph"]["episodes_read"] == 2
    figures = [(key, value) for values in summary["assets"].values() for key, value in values.items()]
    assert [key for key, _ in figures if key.endswith("seconds")] == []
    assert all(type(value) in (int, float) for _, value in figures)  # no flags, tables or previews

    waits = json.loads(run(app, "dream", *WHO, "--json"))
    assert (waits["tenants"], waits["runs"], waits["waiting"]) == ([], [], {ALICE: "2 unpromoted episodes, fewer than 5"})
    # ... which a new process tells without loading Dagster (it would only to run or debounce one)
    assert _dream_in_a_new_process(sample_root, lance_uri, dagster_home) == (waits["waiting"], False)
    assert run(app, "dream", *WHO).splitlines() == [
        f"{ALICE} not dreamed: 2 unpromoted episodes, fewer than 5 (--force to dream it anyway)", "no tenant to dream"]

    dreamed = json.loads(run(app, "dream", *WHO, "--force", "--json"))
    assert dreamed["tenants"] == [ALICE] and dreamed["assets"]["dreaming"]["episodes_promoted"] == 2
    assert store_for(lance_uri).episode_rows(ALICE, "promoted_at IS NULL").height == 0
    # Indexed in the same command: the dreamed document is searchable without another ingest.
    assert dreamed["assets"]["memory_index"]["chunks_written"] >= 1
    written = next(Path(sample_root).glob("support-bot/users/alice/memory/_system/dreaming/*-consolidated.md"))
    line = next(text for text in written.read_text().splitlines() if text.startswith("- "))
    found = json.loads(run(app, "search", line[2:80], *WHO, "--source", "memory", "--json"))
    assert written.relative_to(sample_root).as_posix() in [hit["path"] for hit in found]

    # Within 10 minutes of the last dreaming run, a tenant with enough new episodes still waits.
    json.loads(run(app, "consolidate", *WHO, "--day", "2026-11-04", "--json"))
    with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
        counts = {ALICE: store_for(lance_uri).unpromoted_counts()[ALICE]}
        due, waiting = plan_dreams(instance, counts, datetime.now(UTC), threshold=1)
    assert counts[ALICE] >= 1
    assert due == [] and waiting[ALICE].startswith("requested ") and waiting[ALICE].endswith(" s ago, debounced for 600 s")


_DREAM_PROBE = """
import json, sys
from memory_pipeline.cli import main
sys.argv = ["memory-pipeline", "dream", "--all", "--json"]
try:
    main()
except SystemExit as exit:
    assert not exit.code, exit.code
print(json.dumps("dagster" in sys.modules))
"""


def _dream_in_a_new_process(root, lance_uri, dagster_home) -> tuple[dict, bool]:
    """``dream --all``'s tenants waiting, and whether it imported Dagster, in a new process."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "MEMORY_PIPELINE_ROOT": str(root), "MEMORY_PIPELINE_LANCEDB_URI": lance_uri,
           "MEMORY_PIPELINE_EMBEDDER": "hash", "DAGSTER_HOME": str(dagster_home)}
    done = subprocess.run([sys.executable, "-c", _DREAM_PROBE], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    summary, loaded = done.stdout.strip().rsplit("\n", 1)
    return json.loads(summary)["waiting"], json.loads(loaded)


def test_consolidate_with_nothing_completed_says_so(app):
    assert run(app, "consolidate", *WHO, "--day", "2020-01-01") == "no completed session to consolidate\n"


def test_consolidate_all_is_one_run_and_consolidates_only_what_is_new(app, lance_uri, dagster_home):
    # 10-30 holds a session of alice but is not asked for: it is left alone.
    summary = json.loads(run(app, "consolidate", *WHO, "--day", "2026-10-26", "--day", "2026-11-04", "--json"))
    assert summary["ranges"] == [ALICE] and len(summary["runs"]) == 1
    assert sorted(store_for(lance_uri).episode_rows(ALICE)["day"].to_list()) == ["2026-10-26", "2026-11-04"]

    tenants = ["research-assistant~alice", "research-assistant~carol", ALICE, "support-bot~bob"]
    everyone = json.loads(run(app, "consolidate", "--all", "--json"))
    # Alice was registered by the first command, the others after her: one range from her to bob.
    assert everyone["ranges"] == [f"{ALICE}..support-bot~bob (4 tenants)"]
    assert everyone["success"] and len(everyone["runs"]) == 1 and everyone["tenants"] == tenants
    # 11 completed sessions, 2 of them consolidated by the first command: 9 new.
    episodes = everyone["assets"]["episodic_summaries"]
    assert (episodes["sessions_complete"], episodes["sessions_unchanged"]) == (9, 2)
    with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
        [record] = instance.get_runs(dg.RunsFilter(run_ids=everyone["runs"]))
        registered = instance.get_dynamic_partitions("session_tenants")
    first, last = everyone["ranges"][0].split(" ")[0].split("..")
    assert (record.tags["dagster/asset_partition_range_start"], record.tags["dagster/asset_partition_range_end"]) == (first, last)
    assert sorted(registered[registered.index(first) : registered.index(last) + 1]) == tenants

    before = store_for(lance_uri).episode_rows(ALICE).sort("id")
    again = json.loads(run(app, "consolidate", "--all", "--again", "--json"))
    assert (again["assets"]["episodic_summaries"]["episodes_updated"], len(again["runs"])) == (11, 1)
    assert store_for(lance_uri).episode_rows(ALICE).sort("id").equals(before)
