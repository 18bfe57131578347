"""Dagster resources: where the workspace and LanceDB are, and which embedder to use.

Heavy objects (the embedding model) are loaded once per process and reused by every asset.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import dagster as dg
from pydantic import PrivateAttr

from memory_pipeline.config import Settings, get_settings
from memory_pipeline.embedding import EMBEDDER_IDENTITY, Embedder, make_embedder
from memory_pipeline.orchestration.io_manager import PartitionedPickleIOManager


class WorkspaceResource(dg.ConfigurableResource):
    """The workspace root. Which of its files are memory is a setting (``MEMORY_PIPELINE_INCLUDE``,
    ``MEMORY_PIPELINE_EXCLUDE``), so every reader of the workspace, in a run or not, sees the same files."""

    root: str = "data/agents"
    _run_memo: dict = PrivateAttr(default_factory=dict)

    @property
    def root_path(self) -> Path:
        return Path(self.root).resolve()

    def settings(self) -> Settings:
        return get_settings().model_copy(update={"root": self.root})

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        self._run_memo = {}  # one per run (per step process when steps run in processes of their own)

    def run_memo(self) -> dict:
        """What the steps of one run hand each other in memory, never stored (the sessions the
        episodes read, which the graph reads after)."""
        return self._run_memo


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


# Celery's own settings for the steps of a run: a step whose worker process dies (an
# out-of-memory kill, a lost node) is handed back to the broker and run again by another worker
# instead of being lost, and a worker takes one step at a time (steps are long; prefetching
# would hold a second one back from an idle worker). Steps are idempotent upserts, so running
# one again is safe.
CELERY_SETTINGS = {
    "task_acks_late": True,
    "task_reject_on_worker_lost": True,
    "worker_prefetch_multiplier": 1,
}


def default_executor() -> dg.ExecutorDefinition:
    """The steps of a run: on dagster-celery workers when ``MEMORY_PIPELINE_CELERY_BROKER`` names a
    broker (docs/deploy.md), else in the run's own process (a run loads the model once)."""
    settings = get_settings()
    if not settings.celery_broker:
        return dg.in_process_executor
    from dagster_celery import celery_executor

    return celery_executor.configured({
        "broker": settings.celery_broker, "backend": settings.celery_backend,
        "config_source": dict(CELERY_SETTINGS),
    })
