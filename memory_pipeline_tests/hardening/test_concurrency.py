"""Concurrency: writers racing on one tenant, and recall while the index changes under it.

- Two ``memory-pipeline ingest`` processes for the same tenants are lined up right before their
  chunk commits (a fault point blocks each until both have arrived) and released together: both
  succeed, and the index equals a clean run's (no duplicate, nothing lost). Without the commit
  lock (``store.base.commit_lock``) LanceDB 0.40 kept both inserts of every new chunk id.
- Six threads, each with its own connection, replace chunks of different files of one tenant
  over and over: every write is there at the end.
- Four threads search, inject and read lines for four readers while the main thread changes
  files and re-indexes three times: no call fails, no result comes from outside the reader's
  scope, and the final index equals a clean run over the final files.
- The commit retry (tenacity) retries a commit conflict and gives up on anything else.

Each process has its own Dagster instance: a SQLite instance is not shared between processes
(PostgreSQL is, in production); the shared state under test is the LanceDB database.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from memory_pipeline.config import Settings
from memory_pipeline.embedding import HashEmbedder
from memory_pipeline.l0.store import ChunkIndex
from memory_pipeline.recall.get import get
from memory_pipeline.recall.inject import inject
from memory_pipeline.recall.search import search
from memory_pipeline.store.base import retry_commit
from memory_pipeline.store.tables import CHUNKS
from memory_pipeline_tests.helpers import REPO, run_together, write
from memory_pipeline_tests.helpers.hardening import assert_same_index, ingest_in_process, snapshot

READERS = [("ops-bot", "alice"), ("ops-bot", "bob"), ("ops-bot", None), ("crm-bot", "carol")]
ALLOWED = {
    ("ops-bot", "alice"): {"ops-bot~alice", "ops-bot~_global"},
    ("ops-bot", "bob"): {"ops-bot~bob", "ops-bot~_global"},
    ("ops-bot", None): {"ops-bot~_global"},
    ("crm-bot", "carol"): {"crm-bot~carol", "crm-bot~_global"},
}


def small_workspace(root: Path, round_: int = 0) -> None:
    write(root, "ops-bot/MEMORY.md", f"# Ops\n\nDeploys happen on Tuesdays (round {round_}).\n")
    for user in ("alice", "bob"):
        for n in range(4):
            body = "\n\n".join(f"{user} fact {n}.{p} in round {round_ if n == round_ % 4 else 0}." for p in range(12))
            write(root, f"ops-bot/users/{user}/memory/note-{n}.md", f"# {user} {n}\n\n{body}\n")
    write(root, "crm-bot/users/carol/MEMORY.md", f"# Carol\n\nCarol prefers email, round {round_}.\n")
    gone = root / f"ops-bot/users/alice/memory/extra-{round_ - 1}.md"
    if gone.exists():
        gone.unlink()
    write(root, f"ops-bot/users/alice/memory/extra-{round_}.md", f"# Extra\n\nOnly in round {round_}.\n")


@pytest.mark.slow
def test_two_processes_indexing_the_same_tenants_at_once(tmp_path):
    root, uri = tmp_path / "agents", str(tmp_path / "lancedb")
    small_workspace(root)
    clean = str(tmp_path / "clean")
    ingest_in_process(root, clean)
    release = tmp_path / "go"
    procs, markers = [], []
    for n in range(2):
        home = tmp_path / f"home{n}"
        home.mkdir()
        markers.append(home / "arrived")
        env = {
            **os.environ, "MEMORY_PIPELINE_ROOT": str(root), "MEMORY_PIPELINE_LANCEDB_URI": uri,
            "MEMORY_PIPELINE_EMBEDDER": "hash", "DAGSTER_HOME": str(home),
            "MEMORY_PIPELINE_FAULT": "before_chunks_commit:1", "MEMORY_PIPELINE_FAULT_MARKER": str(markers[-1]),
            "MEMORY_PIPELINE_FAULT_RELEASE": str(release), "PYTHONFAULTHANDLER": "1",
        }
        procs.append(subprocess.Popen([sys.executable, "-m", "memory_pipeline.cli", "ingest", "--json"], cwd=REPO,
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    try:
        deadline = time.monotonic() + 600
        while not all(m.exists() for m in markers):
            ended = [p for p in procs if p.poll() is not None]
            assert not ended, f"a run ended before the barrier: {ended[0].communicate()[1].decode()[-3000:]}"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        release.write_text("go")  # both have embedded and are about to commit: let them race
        outputs = [_finish(p) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for proc, (out, err) in zip(procs, outputs):
        assert proc.returncode == 0, err.decode()[-3000:]
        assert '"success": true' in out.decode()
    assert_same_index(uri, clean)


def _finish(proc: subprocess.Popen) -> tuple[bytes, bytes]:
    """The process's output; if it hangs, its threads' stacks (faulthandler) in the failure."""
    try:
        return proc.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        _, err = proc.communicate()
        raise AssertionError(f"ingest hung after the release; its stacks:\n{err.decode()[-6000:]}") from None


def _rows(tenant: str, path: str, n: int, dim: int = 8) -> pa.Table:
    now = datetime.now(UTC)
    vector = np.full(dim, 1 / np.sqrt(dim), np.float32)
    return pa.Table.from_pylist(
        [
            {"id": f"{path}#{i}", "tenant": tenant, "agent_id": "ops-bot", "user_id": "alice", "path": path,
             "source": "memory", "start_line": i + 1, "end_line": i + 1, "heading": None, "turn_ids": [],
             "text": f"line {i} of {path}", "text_hash": f"{path}{i}", "file_hash": path, "model": "m",
             "vector": vector, "file_date": None, "ts_start": None, "updated_at": now}
            for i in range(n)
        ],
        schema=CHUNKS.schema(dim),
    )


def test_six_writers_on_one_tenant_lose_nothing(tmp_path):
    uri = str(tmp_path / "lancedb")
    ChunkIndex(uri, dim=8).chunks()
    def writer(k: int) -> None:
        store = ChunkIndex(uri, dim=8)  # its own connection, as another process would have
        for size in range(20, 26):  # each round replaces the file's chunks with a longer version
            store.replace_file_chunks("ops-bot~alice", [f"f{k}.md"], _rows("ops-bot~alice", f"f{k}.md", size))

    assert run_together(writer, 6) == []
    chunks = ChunkIndex(uri, dim=8).chunk_rows("ops-bot~alice", ["id", "path"])
    assert chunks.height == 6 * 25 and chunks["id"].is_unique().all()


def test_commit_retry_retries_conflicts_only(tmp_path):
    class FakeStore:
        uri = str(tmp_path)
        calls = {"conflict": 0, "other": 0}

        @retry_commit
        def conflicting(self):
            self.calls["conflict"] += 1
            if self.calls["conflict"] < 3:
                raise RuntimeError("Retryable commit conflict for version 7: preempted by a concurrent transaction")
            return "written"

        @retry_commit
        def broken(self):
            self.calls["other"] += 1
            raise ValueError("schema mismatch: field vector")

    store = FakeStore()
    assert store.conflicting() == "written" and store.calls["conflict"] == 3
    with pytest.raises(ValueError, match="schema mismatch"):
        store.broken()
    assert store.calls["other"] == 1


@pytest.mark.slow
def test_recall_from_four_threads_while_ingesting(tmp_path):
    root, uri = tmp_path / "agents", str(tmp_path / "lancedb")
    small_workspace(root, 0)
    for agent, user in READERS:  # files the readers read line by line; the writer leaves them be
        folder = f"{agent}/users/{user}/memory" if user else f"{agent}/memory"
        write(root, f"{folder}/stable.md", "# Stable\n\nThis note never changes.\n")
    ingest_in_process(root, uri)
    settings = Settings(root=str(root), lancedb_uri=uri, embedder="hash")
    embedder = HashEmbedder()
    stop = threading.Event()
    errors: list[str] = []
    calls = {"search": 0, "inject": 0, "get": 0}
    lock = threading.Lock()

    def reader(agent: str, user: str | None) -> None:
        allowed = ALLOWED[(agent, user)]
        own = f"{agent}/users/{user}/memory/stable.md" if user else f"{agent}/memory/stable.md"
        while not stop.is_set():
            try:
                for hit in search("fact round deploys email", agent, user, store=uri, embedder=embedder,
                                  settings=settings, min_score=0.0, k=10):
                    if hit.tenant not in allowed:
                        errors.append(f"{agent}/{user} got {hit.tenant}")
                inj = inject("which facts changed in this round of deploys?", agent, user, store=uri,
                             embedder=embedder, settings=settings)
                got = get(own, agent=agent, user=user, root=root, settings=settings)
                assert got.lines and inj is not None
                with lock:
                    calls["search"] += 1
                    calls["inject"] += 1
                    calls["get"] += 1
            except Exception as exc:  # noqa: BLE001 - every failure is a finding
                errors.append(f"{agent}/{user}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=reader, args=r) for r in READERS]
    for t in threads:
        t.start()
    try:
        for round_ in (1, 2):
            small_workspace(root, round_)
            result = ingest_in_process(root, uri)
            assert result.success
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert errors == []
    assert min(calls.values()) >= 4
    clean = str(tmp_path / "clean")
    ingest_in_process(root, clean)
    assert_same_index(uri, clean)
    chunks, _ = snapshot(uri)
    assert not chunks.filter(chunks["path"].str.contains("extra-0|extra-1")).height
