"""One indexed copy of the sample workspace for the command-line tests: ingested and one day of
alice's sessions consolidated through the commands themselves (hashing embedder, a private
Dagster home, Definitions holding the L0 and consolidation assets)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest
import typer
from typer.testing import CliRunner, Result

import memory_pipeline.definitions as definitions
from memory_pipeline.l0.assets import l0_assets, l0_index_job
from memory_pipeline.cli import app as cli_group
from memory_pipeline.config import get_settings
from memory_pipeline.consolidation.assets import consolidation_assets, consolidation_job
from memory_pipeline.consolidation.notes_assets import dreaming, dreaming_job
from memory_pipeline_tests.helpers import copy_sample, make_resources

DAY = "2026-10-26"


@dataclass
class World:
    app: typer.Typer
    root: Path
    lance_uri: str
    dagster_home: Path
    first_ingest: dict | None = None  # its --json summary
    reported: dict | None = None  # stage -> units the pipeline reported as progress meanwhile

    def invoke(self, *args: str, input: str | None = None) -> Result:
        return CliRunner().invoke(self.app, list(args), input=input)

    def json(self, *args: str, input: str | None = None):
        result = self.invoke(*args, "--json", input=input)
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)  # the whole of stdout is one JSON document


def _defs(root: Path, lance_uri: str) -> dg.Definitions:
    return dg.Definitions(
        assets=[*l0_assets, *consolidation_assets, dreaming], jobs=[l0_index_job, consolidation_job, dreaming_job],
        resources=make_resources(root, lance_uri),
    )


def _use(mp: pytest.MonkeyPatch, world: World) -> None:
    """Point the settings, the Dagster home and the project's Definitions at ``world``."""
    mp.setenv("MEMORY_PIPELINE_ROOT", str(world.root))
    mp.setenv("MEMORY_PIPELINE_LANCEDB_URI", world.lance_uri)
    mp.setenv("MEMORY_PIPELINE_EMBEDDER", "hash")
    mp.setenv("DAGSTER_HOME", str(world.dagster_home))
    mp.setattr(definitions, "defs", _defs(world.root, world.lance_uri))
    get_settings.cache_clear()


@pytest.fixture(scope="session")
def indexed_sample(tmp_path_factory) -> World:
    """Built once per session; the environment is only changed while it is built."""
    base = tmp_path_factory.mktemp("cli")
    world = World(cli_group, base / "agents", str(base / "lancedb"), base / "dagster_home")
    copy_sample(world.root)
    from collections import Counter

    from memory_pipeline import progress

    reported: Counter = Counter()
    with pytest.MonkeyPatch.context() as mp, progress.listening(lambda stage, n, total: reported.update({stage: n})):
        _use(mp, world)
        world.first_ingest, world.reported = world.json("ingest", "--all"), reported
        world.json("consolidate", "-a", "support-bot", "-u", "alice", "--day", DAY)
    get_settings.cache_clear()
    return world


@pytest.fixture
def world(indexed_sample, monkeypatch) -> World:
    """The indexed sample, with the environment pointing at it for one test."""
    _use(monkeypatch, indexed_sample)
    yield indexed_sample
    get_settings.cache_clear()
