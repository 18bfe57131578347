"""Proves: a command's runs are never silent about what they skipped: without -v the warnings its
runs logged (a file skipped and why) follow on stderr, one line each, and stdout keeps only the
command's output; -v shows warnings as they happen (Dagster's console at WARNING, not INFO), -vv
info, -vvv debug.
"""

from __future__ import annotations

import json
import logging

import dagster as dg
from typer.testing import CliRunner

from memory_pipeline.cli.app import _level, dagster_log_level, flags
from memory_pipeline.config import get_settings
from memory_pipeline.l0.assets import l0_assets, l0_index_job
from memory_pipeline_tests.cli_env import cli_app
from memory_pipeline_tests.helpers import make_resources, write


def test_skipped_files_are_reported_after_the_run_without_v(root, lance_uri, tmp_path, monkeypatch):
    write(root, "support-bot/users/alice/MEMORY.md", "# Alice\n\nPrefers email.\n")
    (root / "support-bot/users/alice/memory").mkdir()
    (root / "support-bot/users/alice/memory/2026-11-20.md").write_bytes(b"bad \xff\xfe bytes")
    defs = dg.Definitions(assets=l0_assets, jobs=[l0_index_job], resources=make_resources(root, lance_uri))
    app = cli_app(monkeypatch, root, lance_uri, tmp_path / "dagster_home", defs)
    try:
        result = CliRunner().invoke(app, ["ingest", "-a", "support-bot", "-u", "alice", "--json"])
    finally:
        get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["assets"]["memory_chunks"]["files_skipped"] == 1
    assert result.stderr.splitlines() == [
        "warning: [support-bot~alice] skipped support-bot/users/alice/memory/2026-11-20.md: not UTF-8: "
        "invalid byte 0xff at offset 4",
    ]


def test_each_v_shows_one_level_more():
    assert [_level(n) for n in range(5)] == [logging.ERROR, logging.WARNING, logging.INFO, logging.DEBUG, logging.DEBUG]
    levels = []
    for verbose in range(4):
        flags.verbose = verbose
        levels.append(dagster_log_level())
    flags.verbose = 0
    assert levels == ["CRITICAL", "WARNING", "INFO", "DEBUG"]
