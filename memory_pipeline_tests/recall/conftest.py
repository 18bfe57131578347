"""A small indexed workspace for recall tests: two agents, a team member, three users.

It is ingested once per test module through the real L0 Dagster job with the hashing embedder,
so recall reads exactly what the pipeline writes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_pipeline.config import Settings
from memory_pipeline.embedding import HashEmbedder
from memory_pipeline_tests.helpers.recall import indexed_workspace, recall_settings


@pytest.fixture(scope="module")
def indexed(tmp_path_factory) -> tuple[Path, str]:
    return indexed_workspace(tmp_path_factory.mktemp("recall"))


@pytest.fixture(scope="module")
def settings(indexed) -> Settings:
    return recall_settings(*indexed)


@pytest.fixture(scope="module")
def embedder() -> HashEmbedder:
    return HashEmbedder()
