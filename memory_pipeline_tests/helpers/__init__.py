"""Helpers shared by the test modules: paths, resources on a temporary workspace, file writing and
racing threads. Fixtures are in the ``conftest.py`` files; test modules never import each other."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
SAMPLE_ROOT = REPO / "data" / "agents"


def copy_sample(dest: Path) -> Path:
    """A private copy of the sample workspace as the repository holds it: without the ``_system``
    folders the pipeline writes into it (``scripts/demo`` dreams there), so a test sees the same
    workspace whatever ran in the checkout before."""
    import shutil

    shutil.copytree(SAMPLE_ROOT, dest, ignore=shutil.ignore_patterns("_system"))
    return dest


def make_resources(root: Path, lance_uri: str, embedder: str = "hash") -> dict:
    # Imported here: a process a test spawns imports this package, and Dagster would add a
    # second or more to its start.
    from memory_pipeline.orchestration.io_manager import PartitionedPickleIOManager
    from memory_pipeline.orchestration.resources import EmbedderResource, LanceDBResource, WorkspaceResource

    # Step outputs beside a local database, or beside the workspace when the database is on
    # object storage (the parent of "s3://bucket/db" is no folder: it named one in the cwd).
    io = Path(lance_uri).parent / "io" if "://" not in lance_uri else root.parent / "io"
    return {
        "io_manager": PartitionedPickleIOManager(base_dir=str(io)),
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
