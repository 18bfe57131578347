"""Dagster resources: where the workspace and LanceDB are, and which embedder to use.

Heavy objects (the embedding model) are loaded once per process and reused by every asset.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import dagster as dg

from memory_pipeline.config import DEFAULT_EXCLUDE, DEFAULT_INCLUDE, Settings, get_settings
from memory_pipeline.embedding import EMBEDDER_IDENTITY, Embedder, make_embedder
from memory_pipeline.orchestration.io_manager import PartitionedPickleIOManager


class WorkspaceResource(dg.ConfigurableResource):
    """The workspace root and which of its files are memory."""

    root: str = "data/agents"
    include: list[str] = list(DEFAULT_INCLUDE)
    exclude: list[str] = list(DEFAULT_EXCLUDE)

    @property
    def root_path(self) -> Path:
        return Path(self.root).resolve()

    def settings(self) -> Settings:
        return get_settings().model_copy(update={"root": self.root})


class LanceDBResource(dg.ConfigurableResource):
    """The LanceDB database holding the memory (a folder, or any URI LanceDB accepts)."""

    uri: str = "data/lancedb"


@lru_cache(maxsize=4)
def _embedder(kind: str, batch_size: int) -> Embedder:
    return make_embedder(kind, batch_size)


class EmbedderResource(dg.ConfigurableResource):
    """Which embedder turns text into vectors: ``minilm`` (real) or ``hash`` (tests only)."""

    kind: str = "minilm"
    batch_size: int = 32

    @property
    def model_name(self) -> str:
        return EMBEDDER_IDENTITY[self.kind][0]

    @property
    def dim(self) -> int:
        return EMBEDDER_IDENTITY[self.kind][1]

    def get(self) -> Embedder:
        return _embedder(self.kind, self.batch_size)


def default_resources() -> dict[str, dg.ConfigurableResource]:
    """Resources configured from the environment (``MEMORY_PIPELINE_*``, see config.py)."""
    settings = get_settings()
    return {
        "workspace": WorkspaceResource(root=settings.root),
        "lancedb": LanceDBResource(uri=settings.lancedb_uri),
        "embedder": EmbedderResource(kind=settings.embedder, batch_size=settings.embed_batch_size),
        "io_manager": PartitionedPickleIOManager(),
    }
