"""Proves: ``grep`` finds every line of the reader's transcripts (turn by turn, as ``role: content``)
and notes that a regular expression matches, each with its citation and time, and nothing of
another user's; it refuses a pattern that does not compile, is too long, or runs past its time
limit (``(a|aa)+$`` on a long line of a's, exponential for a backtracking matcher), with one line
saying why; the CLI answers such a pattern with exit 2 and that line.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from memory_pipeline.cli import app
from memory_pipeline.config import get_settings
from memory_pipeline.recall.grep import GrepError, grep
from memory_pipeline_tests.helpers import write
from memory_pipeline_tests.helpers.recall import build_workspace, recall_settings


@pytest.fixture
def settings(tmp_path):
    root = tmp_path / "agents"
    build_workspace(root)
    return recall_settings(root, str(tmp_path / "lancedb"))


def find(pattern: str, settings, user: str = "alice", **options):
    return grep(pattern, agent="support-bot", user=user, settings=settings, **options)


def test_matches_turns_and_note_lines_the_reader_may_read(settings):
    found = find(r"invoices|email|codeword", settings)
    assert [m.to_dict() for m in found.matches] == [
        {"citation": "support-bot/sessions/alice/s1.jsonl#L4", "kind": "turn", "when": "2026-11-04 09:01 UTC",
         "text": "alice: Also, my invoices should go to the finance mailbox."},
        {"citation": "support-bot/users/alice/MEMORY.md#L3", "kind": "note_line", "when": None,
         "text": "Alice prefers to be contacted by email, never by phone."},
    ]  # bob's codeword is in his own memory only
    assert found.truncated is False and found.files_searched == 7
    assert [m.citation for m in find("codeword", settings, user="bob").matches] == ["support-bot/users/bob/MEMORY.md#L3"]
    assert [m.citation for m in find("OUTAGE", settings, user=None, ignore_case=True).matches] == [
        "support-bot/memory/2026-10-01.md#L1", "support-bot/memory/2026-10-01.md#L3",
        "support-bot/memory/2026-11-20.md#L1", "support-bot/memory/2026-11-20.md#L3"]
    assert find("OUTAGE", settings, user=None, ignore_case=True, limit=2).truncated is True


def test_refuses_bad_long_and_pathological_patterns(settings):
    with pytest.raises(GrepError, match=r"bad regular expression '\(unclosed': missing \)"):
        find("(unclosed", settings)
    with pytest.raises(GrepError, match="over the 300-character limit"):
        find("a" * 301, settings)
    write(Path(settings.root), "support-bot/users/alice/memory/long.md", "a" * 4000 + "b\n")
    with pytest.raises(GrepError, match=r"ran past the time limit of matching"):
        find(r"(a|aa)+$", settings, time_limit_s=0.2)


@pytest.fixture
def cli_settings(settings, monkeypatch):
    monkeypatch.setenv("MEMORY_PIPELINE_ROOT", settings.root)
    monkeypatch.setenv("MEMORY_PIPELINE_LANCEDB_URI", settings.lancedb_uri)
    get_settings.cache_clear()
    yield settings
    get_settings.cache_clear()


def test_cli_answers_a_bad_pattern_with_one_line_and_exit_2(cli_settings):
    runner = CliRunner()
    bad = runner.invoke(app, ["grep", "([a-z]", "-a", "support-bot", "-u", "alice"])
    assert (bad.exit_code, bad.stdout) == (2, "")
    assert bad.stderr.strip() == "error: bad regular expression '([a-z]': missing ) at position 6"
    good = runner.invoke(app, ["grep", "finance", "-a", "support-bot", "-u", "alice"])
    assert (good.exit_code, good.stdout) == (
        0, "support-bot/sessions/alice/s1.jsonl#L4 (2026-11-04 09:01 UTC): alice: Also, my invoices should go to "
        "the finance mailbox.\n")
