"""The ``memories`` and ``memory`` commands as a user runs them: ingest through the Dagster job on
the sample workspace, then query, store, forget, bulletin and stats, each answering on stdout;
search and query answer with records for people (ids whole at any width) and JSON for programs.
"""

from __future__ import annotations

import json

import dagster as dg
import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from memory_pipeline.config import get_settings
from memory_pipeline.cli import output as cli_output
from memory_pipeline.memories.assets import typed_memory_assets, typed_memories_job
from memory_pipeline_tests.cli_env import cli_app, run
from memory_pipeline_tests.helpers import make_resources

pytestmark = pytest.mark.slow


@pytest.fixture
def app(sample_root, lance_uri, tmp_path, monkeypatch):
    defs = dg.Definitions(assets=typed_memory_assets, jobs=[typed_memories_job], resources=make_resources(sample_root, lance_uri))
    yield cli_app(monkeypatch, sample_root, lance_uri, tmp_path / "dagster_home", defs)
    get_settings.cache_clear()


def test_ingest_then_ask_store_and_forget(app):
    summary = json.loads(run(app, "memories", "ingest", "--user", "carol", "--input", "transcript", "--json"))
    figures = summary["assets"]["typed_memories"]
    assert summary["success"] and figures["files_extracted"] == 2
    # Every run's figures; timings, previews and flags left out.
    assert list(summary) == ["tenants", "runs", "success", "seconds", "input", "assets", "checks"]
    assert summary["tenants"] == ["research-assistant~carol"] and summary["input"] == "transcript"
    assert len(summary["runs"]) == 1
    assert not [key for key in figures if key.endswith("seconds") or key == "preview"]
    again = run(app, "memories", "ingest", "--user", "carol", "--input", "transcript")
    assert again.startswith("memories ingest: 1 tenant(s), 1 run(s), ")
    assert "files_extracted 0" in again and "files_unchanged 2" in again

    who = ["--agent", "research-assistant", "--user", "carol"]
    todos = json.loads(run(app, "memories", "query", *who, "--type", "todo", "--json"))
    assert any("Remind Carol to ask Jonah" in t["content"] for t in todos)
    stored = json.loads(run(app, "memory", "store", "Prefers Chicago style notes", *who, "--type", "preference", "--json"))
    assert stored["source"] == "live"
    bulletin = run(app, "memories", "bulletin", "memory", *who)
    assert "## Preferences" in bulletin and "Prefers Chicago style notes" in bulletin
    forgotten = json.loads(run(app, "memory", "forget", stored["id"], *who, "--reason", "duplicate", "--json"))
    assert forgotten == {"id": stored["id"], "forgotten": True, "reason": "duplicate"}
    stats = json.loads(run(app, "memories", "stats", *who, "--json"))
    assert stats["by_source"]["live"] == 0 and stats["by_source"]["transcript"] == stats["memories"] > 0
    assert stats["audit"]["forget"] == 1


def test_errors_are_one_line_and_say_what_to_do(app):
    result = CliRunner().invoke(app, ["memories", "query", "--agent", "research-assistant", "--user", "carol",
                                      "--happens-within", "soon"])
    assert result.exit_code == 2
    assert "not a duration" in result.output and "Traceback" not in result.output


def test_search_and_query_print_records_or_say_nothing_was_found(app, monkeypatch):
    monkeypatch.setattr(cli_output, "console", lambda: Console(width=60))  # a narrow terminal: the id stays whole
    who = ["--agent", "research-assistant", "--user", "carol"]
    stored = json.loads(run(app, "memory", "store", "Prefers Chicago style notes", *who, "--type", "preference", "--json"))
    said = stored["occurred_at"][:16].replace("T", " ").removesuffix(" 00:00")  # midnight: the day alone

    for args, title in (
        (["memories", "query", *who, "--type", "preference"], "memories of research-assistant/carol"),
        (["memories", "search", "Chicago style notes", *who], "memories of research-assistant/carol for 'Chicago style notes'"),
    ):
        lines = run(app, *args).splitlines()
        assert lines[0] == title
        at = next(n for n, line in enumerate(lines) if line.startswith(stored["id"]))
        header = lines[at].split("  ")
        assert header[:5] == [stored["id"], "preference", f"said {said}", "conf 0.80", "live"]
        assert lines[at + 1] == "    Prefers Chicago style notes"
        as_json = json.loads(run(app, *args, "--json"))
        assert [hit["id"] for hit in as_json] == [stored["id"]]

    assert run(app, "memories", "query", *who, "--type", "todo") == "memories of research-assistant/carol: nothing found\n"


def test_a_long_memory_is_printed_to_a_whole_word_and_an_ellipsis(app, monkeypatch):
    monkeypatch.setattr(cli_output, "console", lambda: Console(width=1000))  # one line per record
    who = ["--agent", "research-assistant", "--user", "carol"]
    long = " ".join(["Carol keeps her field notes on the Edinburgh heat sensors in a shared notebook"] * 6)
    stored = json.loads(run(app, "memory", "store", long, *who, "--type", "fact", "--json"))
    lines = run(app, "memories", "query", *who, "--type", "fact").splitlines()
    shown = lines[next(n for n, line in enumerate(lines) if line.startswith(stored["id"])) + 1].strip()
    assert shown.endswith("…") and len(shown) <= 300
    kept = shown.removesuffix("…")
    assert long.startswith(kept) and long[len(kept)] == " "  # the last word shown is whole
    as_json = json.loads(run(app, "memories", "query", *who, "--type", "fact", "--json"))
    assert next(m["content"] for m in as_json if m["id"] == stored["id"]) == long  # programs get it whole


def test_graph_the_groups_former_name_still_runs_its_commands_with_a_notice(app):
    who = ["--agent", "research-assistant", "--user", "carol"]
    result = CliRunner().invoke(app, ["graph", "query", *who, "--type", "todo"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "memories of research-assistant/carol: nothing found\n"
    assert result.stderr.count("\n") == 1 and "'graph' is now 'memories'" in result.stderr
    groups = typer.main.get_command(app).commands
    assert groups["graph"].hidden and not groups["memories"].hidden  # --help lists only "memories"
