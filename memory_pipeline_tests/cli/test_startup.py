"""Proves: ``memory-pipeline --help`` starts without Dagster, LanceDB, Arrow, Polars, torch or
spaCy (seconds of imports that only the commands needing them pay), the installed entry point is
the CLI package's ``main`` (one subprocess: start-up is what it measures), and every command list
shows each command's summary whole, on one line."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib

from memory_pipeline_tests.helpers import REPO

HEAVY = ("dagster", "lancedb", "pyarrow", "polars", "torch", "sentence_transformers", "spacy", "mcp")
PROBE = f"""
import json, sys
from memory_pipeline.cli import main
sys.argv = ["memory-pipeline", "--help"]
try:
    main()
except SystemExit as exit:
    code = exit.code
print(json.dumps({{"code": code, "heavy": sorted(m for m in {HEAVY!r} if m in sys.modules)}}))
"""


def test_help_imports_no_heavy_library():
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    *help_lines, last = done.stdout.strip().splitlines()
    assert json.loads(last) == {"code": 0, "heavy": []}
    text = "\n".join(help_lines)
    assert "ingest" in text and "search" in text and "Exit codes" in text


def test_the_entry_point_is_the_cli_packages_main():
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"memory-pipeline": "memory_pipeline.cli:main"}


def test_each_command_list_shows_every_summary_on_one_line():
    """A docstring wrapped in the source once came out broken mid-sentence in ``--help``'s
    command list ("(a key added" / "by hand, ..."), as typer's rich help keeps its line breaks."""
    import typer
    from typer.testing import CliRunner

    from memory_pipeline.cli import app as cli_group

    group = typer.main.get_command(cli_group)
    runner = CliRunner(env={"TERMINAL_WIDTH": "1000", "COLUMNS": "1000"})
    checked = 0
    for path, command in [((), group), *(((name,), sub) for name, sub in group.commands.items() if hasattr(sub, "commands"))]:
        lines = [" ".join(line.strip("│ ").split()) for line in runner.invoke(cli_group, [*path, "--help"]).output.splitlines()]
        for name, sub in command.commands.items():
            if sub.hidden or not sub.help:
                continue
            summary = " ".join(sub.help.split("\n\n")[0].split())
            assert f"{name} {summary}" in lines, (path, name)
            checked += 1
    assert checked > 20
