"""Shared fixtures: a temporary workspace root, a LanceDB folder, an ephemeral Dagster instance.

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
from memory_pipeline.app import assemble  # noqa: E402
from memory_pipeline.orchestration.io_manager import PartitionedPickleIOManager  # noqa: E402
from memory_pipeline.orchestration.resources import EmbedderResource, LanceDBResource, WorkspaceResource  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SAMPLE_ROOT = REPO / "data" / "agents"

assemble()  # recall with every source, as the CLI and the MCP server run it

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


@pytest.fixture
def lance_uri(tmp_path: Path) -> str:
    return str(tmp_path / "lancedb")


@pytest.fixture
def instance():
    with dg.instance_for_test() as inst:
        yield inst


def make_resources(root: Path, lance_uri: str, embedder: str = "hash") -> dict:
    return {
        "io_manager": PartitionedPickleIOManager(base_dir=str(Path(lance_uri).parent / "io")),
        "workspace": WorkspaceResource(root=str(root)),
        "lancedb": LanceDBResource(uri=lance_uri),
        "embedder": EmbedderResource(kind=embedder),
    }


def write(root: Path, rel: str, text: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def run_together(work, count: int) -> list[BaseException]:
    """Run ``work(k)`` for k in 0..count-1 on as many threads, released at once by a barrier;
    returns what they raised (empty when every one succeeded)."""
    import threading

    barrier = threading.Barrier(count)
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            barrier.wait()
            work(k)
        except BaseException as exc:  # noqa: BLE001 - returned to the test
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


@pytest.fixture(scope="session")
def nlp():
    """The spaCy pipeline, loaded once for the run (statements, relations and typed memories share it)."""
    from memory_pipeline.text.statements import load_nlp

    return load_nlp()
