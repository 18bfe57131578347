"""The project's command line as a test runs it: on a given workspace and LanceDB folder, with the
hashing embedder, a private Dagster home and Definitions holding only the assets under test."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
import typer
from typer.testing import CliRunner

import memory_pipeline.definitions as definitions
from memory_pipeline.cli import app as cli_group
from memory_pipeline.config import get_settings


def cli_app(monkeypatch: pytest.MonkeyPatch, root: Path, lance_uri: str, dagster_home: Path, defs: dg.Definitions) -> typer.Typer:
    """The ``memory-pipeline`` app with every feature's commands; call ``get_settings.cache_clear()`` after."""
    monkeypatch.setenv("MEMORY_PIPELINE_ROOT", str(root))
    monkeypatch.setenv("MEMORY_PIPELINE_LANCEDB_URI", lance_uri)
    monkeypatch.setenv("MEMORY_PIPELINE_EMBEDDER", "hash")
    monkeypatch.setenv("DAGSTER_HOME", str(dagster_home))
    get_settings.cache_clear()
    # The project's Definitions read their resources from the environment once, at import.
    monkeypatch.setattr(definitions, "defs", defs)
    return cli_group


def run(app: typer.Typer, *args: str) -> str:
    """What a command printed on stdout; it must have succeeded."""
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout
