"""Shared fixtures: a temporary workspace root, a LanceDB folder, an ephemeral Dagster instance, the
environment of an MCP server on the sample workspace. Helpers live in ``memory_pipeline_tests.helpers``.

Unit tests use the hashing embedder (no model); tests marked ``slow`` use the real one.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import dagster as dg
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from memory_pipeline.app import assemble  # noqa: E402
from memory_pipeline_tests.helpers import SAMPLE_ROOT, make_resources, run_together, write  # noqa: E402, F401
from memory_pipeline_tests.helpers.mcp import mcp_environment  # noqa: E402

assemble()  # recall with every source, as the CLI and the MCP server run it


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "agents"
    path.mkdir()
    return path


@pytest.fixture
def sample_root(tmp_path: Path) -> Path:
    """A private copy of the sample workspace in data/agents."""
    dest = tmp_path / "sample"
    shutil.copytree(SAMPLE_ROOT, dest)
    return dest


@pytest.fixture(scope="session")
def minilm():
    """The real embedder, loaded once for the whole run."""
    from memory_pipeline.embedding import MiniLMEmbedder

    return MiniLMEmbedder()


@pytest.fixture(scope="session")
def statement_nlp():
    """The spaCy pipeline supersession parses statements with, loaded once for the whole run."""
    from memory_pipeline.text.memory_types import load_nlp

    return load_nlp()


@pytest.fixture
def lance_uri(tmp_path: Path) -> str:
    return str(tmp_path / "lancedb")


@pytest.fixture
def instance():
    with dg.instance_for_test() as inst:
        yield inst


@pytest.fixture(scope="session")
def nlp():
    """The spaCy pipeline, loaded once for the run (statements, relations and typed memories share it)."""
    from memory_pipeline.text.statements import load_nlp

    return load_nlp()


@pytest.fixture(scope="module")
def mcp_env(tmp_path_factory) -> dict[str, str]:
    """An MCP server's environment: a copy of the sample workspace and typed memories of carol."""
    return mcp_environment(tmp_path_factory.mktemp("mcp"))
