"""Shared fixtures: a temporary workspace root, a LanceDB folder, an ephemeral Dagster instance, the
environment of an MCP server on the sample workspace. Helpers live in ``memory_pipeline_tests.helpers``.

Unit tests use the hashing embedder (no model); tests marked ``slow`` use the real one.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import warnings
from pathlib import Path

import dagster as dg
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
if os.environ.get("PYTEST_XDIST_WORKER"):
    # Two workers on two cores: one math thread each (torch, OpenMP, OpenBLAS), also in the
    # processes a test starts. Two processes embedding at once took 22 s each with one thread,
    # 44-60 s with two (load 5-7, 300 notes through MiniLM).
    os.environ.setdefault("OMP_NUM_THREADS", "1")

from memory_pipeline_tests.helpers import copy_sample, make_resources, run_together, write  # noqa: E402, F401
from memory_pipeline_tests.helpers.mcp import mcp_environment  # noqa: E402
from memory_pipeline_tests.helpers.object_store import moto_s3, s3_env  # noqa: E402


# -- parallel runs (pytest-xdist: ``scripts/test`` runs ``-n 2 --dist loadgroup``) ----------------
# Each test file goes to one worker, so a module-scoped fixture is built once; files whose tests
# share a session fixture that runs a whole pipeline or starts a service go to one worker together,
# so it is built once per run, not once per worker (two Dagster services on two cores would also
# slow each other's every-minute schedules). xdist's own ``xdist_group`` marks are not honoured
# under pytest 9.2 (pytest-dev/pytest-xdist#1386), so the groups are made by a scheduler here.
SHARED_FIXTURE_FILES = {
    "dagster_service": ("memory_pipeline_tests/production/test_service_end_to_end.py",
                        "memory_pipeline_tests/production/test_ui_in_browser.py"),
    "leaky": ("memory_pipeline_tests/hardening/test_forget_tenant.py", "memory_pipeline_tests/hardening/test_secrets_end_to_end.py"),
    "indexed_sample": ("memory_pipeline_tests/cli/test_python_api.py", "memory_pipeline_tests/cli/test_vocabulary.py"),
}
# The longest work, handed out first so that it overlaps with the rest (the run ends when its last
# long test does): groups or files, in the order of their time in a ``--durations`` profile: the
# service tests, the multi-worker deployment, the quick benchmark, the leaky workspace's tests,
# the Definitions smoke test, the object-storage race, the chain.
LONGEST_FIRST = (
    "dagster_service",
    "memory_pipeline_tests/production/test_celery_workers.py",  # its own workers, beside the service
    "memory_pipeline_tests/bench/test_bench_quick.py",
    "leaky",
    "memory_pipeline_tests/test_definitions_smoke.py",
    "memory_pipeline_tests/hardening/test_forget_memory_concurrent.py",
    "memory_pipeline_tests/consolidation/test_chain.py",
    "memory_pipeline_tests/store/test_cache_growth.py",
)
SLOW_WEIGHT = 30  # a slow test against a fast one, roughly, to order the rest


def worker_group(nodeid: str) -> str:
    """The unit of work of a test for the scheduler: its shared fixture's group, else its file."""
    path = nodeid.split("::", 1)[0]
    for group, prefixes in SHARED_FIXTURE_FILES.items():
        if path.startswith(prefixes):
            return group
    return path


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, absent without it
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup``: whole groups of :func:`worker_group` to a worker, in collection order."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return worker_group(nodeid)

    config.option.loadscopereorder = False  # keep the longest-first order of the collection
    return GroupScheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On an xdist worker: order the longest groups first (the same order on every worker, as
    xdist requires; a run without workers keeps the files' order), and warn when a test uses a
    shared fixture outside the files listed for it (it would be built once more on another worker)."""
    if not hasattr(config, "workerinput"):
        return
    weights: dict[str, float] = {}
    keys = []
    for item in items:
        key = worker_group(item.nodeid)
        for fixture in SHARED_FIXTURE_FILES:
            if fixture in item.fixturenames and key != fixture:
                warnings.warn(f"{item.nodeid} uses {fixture}: add its file to SHARED_FIXTURE_FILES in {__file__}", stacklevel=1)
        weights[key] = weights.get(key, 0) + (SLOW_WEIGHT if item.get_closest_marker("slow") else 1)
        keys.append(key)

    def rank(key: str) -> int:
        return LONGEST_FIRST.index(key) if key in LONGEST_FIRST else len(LONGEST_FIRST)

    first_seen = {key: i for i, key in enumerate(dict.fromkeys(keys))}
    ordered = sorted(zip(keys, items), key=lambda pair: (rank(pair[0]), -weights[pair[0]], first_seen[pair[0]]))
    items[:] = [item for _, item in ordered]


@pytest.fixture(autouse=True)
def _root_logger_without_handlers_of_earlier_tests():
    """Each test starts with no handler on the root logger but pytest's own. An MCP server built in
    the test process (the mcp library's ``configure_logging``) adds a rich handler at INFO there, and
    a later test's CLI run, finding a handler already set, printed alembic's info lines to stderr
    beside its one-line error."""
    root = logging.getLogger()
    for handler in root.handlers[:]:
        if not type(handler).__module__.startswith("_pytest"):
            root.removeHandler(handler)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "agents"
    path.mkdir()
    return path


@pytest.fixture
def sample_root(tmp_path: Path) -> Path:
    """A private copy of the sample workspace in data/agents."""
    dest = tmp_path / "sample"
    return copy_sample(dest)


@pytest.fixture(scope="session")
def minilm():
    """The real embedder, loaded once for the whole run."""
    from memory_pipeline.embedding import MiniLMEmbedder

    return MiniLMEmbedder()


@pytest.fixture(scope="session")
def in_memory(tmp_path_factory):
    """A folder on tmpfs (``/dev/shm``) when the machine has one, else pytest's temporary folder.

    For a Dagster instance with many events: SQLite commits each event, and on disk every commit
    waits for an fsync (6-11 ms, more on a loaded machine; 0.02 ms on tmpfs). The leaky
    workspace's ~600 events: built in 144 s with its instance on disk, 107 s on tmpfs (load 11-16).
    """
    shm = Path("/dev/shm")
    if not shm.is_dir():
        yield tmp_path_factory.mktemp("in_memory")
        return
    folder = Path(tempfile.mkdtemp(prefix="memory-pipeline-tests-", dir=shm))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def in_memory_path(in_memory: Path):
    """An empty folder of one test in ``in_memory``, removed after it."""
    folder = Path(tempfile.mkdtemp(dir=in_memory))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def lance_uri(tmp_path: Path) -> str:
    return str(tmp_path / "lancedb")


@pytest.fixture
def instance():
    with dg.instance_for_test() as inst:
        yield inst


@pytest.fixture(scope="session")
def nlp():
    """The spaCy pipeline, loaded once for the run (statements, relations, typed memories and
    supersession share it)."""
    from memory_pipeline.text.statements import load_nlp

    return load_nlp()


@pytest.fixture(scope="module")
def mcp_env(tmp_path_factory) -> dict[str, str]:
    """An MCP server's environment: a copy of the sample workspace and typed memories of carol."""
    return mcp_environment(tmp_path_factory.mktemp("mcp"))


@pytest.fixture
def s3(monkeypatch, tmp_path):
    """An S3 endpoint (moto) with an empty bucket; yields its base URL."""
    with moto_s3(tmp_path) as url:
        for key, value in s3_env(url).items():
            monkeypatch.setenv(key, value)
        yield url
