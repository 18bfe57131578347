"""Proves: what ``--help`` says a command takes is what it takes, and an empty query is refused
the same way by every search (before, ``search ""`` answered nothing with exit 0 while ``memories
search ""`` and the MCP tool refused it, and ``-k`` read 1-1000 where ``memories`` commands refuse
above 100).
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from memory_pipeline.cli import app as cli_group
from memory_pipeline.cli import options
from memory_pipeline.memories.query import MAX_RESULTS

runner = CliRunner()


def test_the_memories_limit_is_the_one_typed_memory_queries_apply():
    assert options.MEMORIES_MAX_RESULTS == MAX_RESULTS


@pytest.mark.parametrize("command", [["memories", "search", "tea"], ["memories", "query"]])
def test_memories_commands_say_and_apply_their_limit(command):
    help_text = " ".join(runner.invoke(cli_group, [*command[:2], "--help"]).output.split())
    assert f"1<=x<={MAX_RESULTS}" in help_text and "1<=x<=1000" not in help_text
    refused = runner.invoke(cli_group, [*command, "-a", "bot", "-k", str(MAX_RESULTS + 1)])
    assert refused.exit_code == 2
    assert f"Invalid value for '--limit' / '-k': Input should be less than or equal to {MAX_RESULTS}" in refused.output


@pytest.mark.parametrize("query", ["", "   "])
def test_search_refuses_an_empty_query(query):
    refused = runner.invoke(cli_group, ["search", query, "-a", "bot"])
    assert refused.exit_code == 2
    assert refused.output.startswith("error: the query is empty: say what to recall")
