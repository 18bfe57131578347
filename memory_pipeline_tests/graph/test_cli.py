"""The ``graph`` and ``memory`` commands as a user runs them: ingest through the Dagster job on
the sample workspace, then query, store, forget, bulletin and stats, each answering on stdout.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import dagster as dg

import memory_pipeline.definitions as definitions
from memory_pipeline import cli
from memory_pipeline.config import get_settings
from memory_pipeline.graph.assets import graph_assets, graph_ingest_job
from memory_pipeline_tests.conftest import make_resources

pytestmark = pytest.mark.slow


@pytest.fixture
def app(sample_root, lance_uri, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMORY_PIPELINE_ROOT", str(sample_root))
    monkeypatch.setenv("MEMORY_PIPELINE_LANCEDB_URI", lance_uri)
    monkeypatch.setenv("MEMORY_PIPELINE_EMBEDDER", "hash")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    get_settings.cache_clear()
    # The project's Definitions read their resources from the environment once, at import.
    defs = dg.Definitions(assets=graph_assets, jobs=[graph_ingest_job], resources=make_resources(sample_root, lance_uri))
    monkeypatch.setattr(definitions, "defs", defs)
    if not any(group.name == "graph" for group in cli.app.registered_groups):
        cli._register_features()
    yield cli.app
    get_settings.cache_clear()


def run(app, *args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_ingest_then_ask_store_and_forget(app):
    summary = json.loads(run(app, "graph", "ingest", "--user", "carol", "--source", "transcript", "--json"))
    assert summary["success"] and summary["files_extracted"] == 2
    again = json.loads(run(app, "graph", "ingest", "--user", "carol", "--source", "transcript", "--json"))
    assert (again["files_extracted"], again["files_unchanged"]) == (0, 2)

    who = ["--agent", "research-assistant", "--user", "carol"]
    todos = json.loads(run(app, "graph", "query", *who, "--type", "todo", "--json"))
    assert any("Remind me to ask Jonah" in t["content"] for t in todos)
    stored = json.loads(run(app, "memory", "store", "Prefers Chicago style notes", *who, "--type", "preference"))
    assert stored["source"] == "live"
    bulletin = run(app, "graph", "bulletin", "memory", *who)
    assert "## Preferences" in bulletin and "Prefers Chicago style notes" in bulletin
    forgotten = json.loads(run(app, "memory", "forget", stored["id"], *who, "--reason", "duplicate"))
    assert forgotten == {"id": stored["id"], "forgotten": True, "reason": "duplicate"}
    stats = json.loads(run(app, "graph", "stats", *who, "--json"))
    assert stats["by_source"]["live"] == 0 and stats["by_source"]["transcript"] == stats["memories"] > 0
    assert stats["audit"]["forget"] == 1


def test_errors_are_one_line_and_say_what_to_do(app):
    result = CliRunner().invoke(app, ["graph", "query", "--agent", "research-assistant", "--user", "carol",
                                      "--happens-within", "soon"])
    assert result.exit_code == 2
    assert "not a duration" in result.output and "Traceback" not in result.output
