"""The recall commands through typer's runner: tables for people, JSON for programs, and errors
that say what to do (no index yet, a refused path, an unknown source).
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from memory_pipeline.config import get_settings
from memory_pipeline.cli import app as cli_group

runner = CliRunner()


@pytest.fixture
def app(indexed, monkeypatch):
    root, lance_uri = indexed
    monkeypatch.setenv("MEMORY_PIPELINE_ROOT", str(root))
    monkeypatch.setenv("MEMORY_PIPELINE_LANCEDB_URI", lance_uri)
    monkeypatch.setenv("MEMORY_PIPELINE_EMBEDDER", "hash")
    monkeypatch.setenv("MEMORY_PIPELINE_TEAMS", '{"helper-bot": "support-bot"}')
    get_settings.cache_clear()
    yield cli_group
    get_settings.cache_clear()


def test_search_json_lists_cited_results(app):
    result = runner.invoke(app, ["search", "annual plans refundable", "--agent", "support-bot", "--user", "bob", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert rows[0]["citation"].startswith("support-bot/MEMORY.md#L")
    assert set(rows[0]["parts"]) >= {"vector", "text", "decay", "boost"}


def test_search_table_and_source_filter(app):
    result = runner.invoke(app, ["search", "API rate limit requests", "-a", "support-bot", "-u", "alice", "--source", "sessions", "--limit", "2"])
    assert result.exit_code == 0, result.output
    assert "s1.jsonl" in result.stdout and "2,000" in result.stdout
    assert "MEMORY.md" not in result.stdout


def test_search_with_no_index_says_to_ingest(app, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMORY_PIPELINE_LANCEDB_URI", str(tmp_path / "empty-db"))
    get_settings.cache_clear()
    result = runner.invoke(app, ["search", "anything", "--agent", "support-bot"])
    assert result.exit_code == 2
    assert "memory-pipeline ingest" in result.output


def test_search_unknown_source_names_the_known_ones(app):
    result = runner.invoke(app, ["search", "anything", "--agent", "support-bot", "--source", "notes"])
    assert result.exit_code == 2 and "memory" in result.output and "sessions" in result.output


def test_get_prints_numbered_lines_and_refuses_other_users(app):
    ok = runner.invoke(app, ["get", "support-bot/users/alice/MEMORY.md#L1-L3", "--agent", "support-bot", "--user", "alice"])
    assert ok.exit_code == 0, ok.output
    assert "    3  Alice prefers to be contacted by email, never by phone." in ok.stdout
    as_json = json.loads(runner.invoke(app, ["get", "support-bot/MEMORY.md", "--agent", "support-bot", "--from", "3", "--lines", "1", "--json"]).stdout)
    assert as_json["text"] == "Annual plans are refundable within 30 days of purchase."
    refused = runner.invoke(app, ["get", "support-bot/users/bob/MEMORY.md", "--agent", "support-bot", "--user", "alice"])
    assert refused.exit_code == 2 and "not in the memory" in refused.output


def test_inject_reports_counts_and_skips_trivial_messages(app):
    result = runner.invoke(app, ["inject", "Can I get a refund on annual plans?", "--agent", "support-bot", "--user", "alice", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["injected"] >= 1 and data["matched"] >= data["injected"] and data["top_score"] > 0.3
    assert data["section"].startswith("## Relevant memory")
    trivial = runner.invoke(app, ["inject", "ok thanks!", "--agent", "support-bot", "--user", "alice"])
    assert trivial.exit_code == 0 and "trivial message" in trivial.stdout


def test_get_prints_a_typed_memory_as_a_record(app, tmp_path, monkeypatch):
    from memory_pipeline.embedding import HashEmbedder
    from memory_pipeline.memories.operations import TypedMemories
    from memory_pipeline.tenancy import Tenant

    lance_uri = str(tmp_path / "facts-db")
    stored = TypedMemories.open(lance_uri, HashEmbedder()).store_memory(
        Tenant("support-bot", "alice"), "fact", "Alice's desk is on the third floor"
    )
    monkeypatch.setenv("MEMORY_PIPELINE_LANCEDB_URI", lance_uri)
    get_settings.cache_clear()
    result = runner.invoke(app, ["get", f"facts/{stored['id']}", "--agent", "support-bot", "--user", "alice"])
    assert result.exit_code == 0, result.output
    assert "1 lines in record" in result.stdout and "Alice's desk is on the third floor" in result.stdout
    refused = runner.invoke(app, ["get", f"facts/{stored['id']}", "--agent", "support-bot", "--user", "bob"])
    assert refused.exit_code == 2
