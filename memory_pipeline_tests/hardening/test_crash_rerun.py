"""Crash and rerun: the L0 job is killed with SIGKILL at a known step, rerun, and the index is then
exactly a clean run's: the same chunk ids with the same lines, text and vectors, no duplicate,
nothing missing, the same manifest, every asset check green.

The run is the real command (``memory-pipeline ingest``: a Dagster run over every tenant, SQLite
instance, the hashing embedder) in its own process. A fault point (``memory_pipeline.faults``)
writes a marker file and blocks when the process reaches the step; the test then kills it there:
- ``after_embed_block:1``: one block of 2,048 vectors is in the embedding cache, the rest not;
- ``write_batch:1``: inside the first tenant's chunk commit, while LanceDB reads the row stream;
- ``after_chunks_commit:1``: the first tenant's chunks are committed, its manifest is not, and the
  other tenants are not written at all.
A second scenario kills a run that re-indexes changed and deleted files, mid-commit.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from memory_pipeline_tests.helpers import REPO, write
from memory_pipeline_tests.helpers.hardening import assert_same_index, ingest_in_process, snapshot

pytestmark = pytest.mark.slow

BIG_SESSION_TURNS = 2100  # more distinct texts than one embedding block (2,048)


def build_workspace(root: Path) -> None:
    write(root, "ops-bot/MEMORY.md", "# Ops\n\nDeploys happen on Tuesdays after the standup.\n")
    for n in range(6):
        paragraphs = "\n\n".join(f"Note {n}.{p}: the {p}th detail of topic {n} is worth keeping." for p in range(40))
        write(root, f"ops-bot/users/alice/memory/topic-{n}.md", f"# Topic {n}\n\n{paragraphs}\n")
    turns = "".join(
        json.dumps({"role": "user" if i % 2 == 0 else "assistant", "content": f"Message {i} about item {i * 7}.",
                    "ts": f"2026-11-0{1 + i % 5}T10:{i % 60:02d}:00Z", "turn_id": f"t{i}"}) + "\n"
        for i in range(BIG_SESSION_TURNS)
    )
    write(root, "ops-bot/sessions/alice/big.jsonl", turns)
    write(root, "ops-bot/users/bob/MEMORY.md", "# Bob\n\nBob is on call in December.\n")
    write(root, "crm-bot/users/carol/MEMORY.md", "# Carol\n\nCarol prefers email.\n")


def change_workspace(root: Path) -> None:
    write(root, "ops-bot/users/alice/memory/topic-0.md", "# Topic 0\n\nRewritten entirely.\n")
    (root / "ops-bot/users/alice/memory/topic-1.md").unlink()
    write(root, "ops-bot/users/bob/memory/new.md", "# New\n\nBob moved to the platform team.\n")


def killed_run(root: Path, lance_uri: str, home: Path, fault: str) -> str:
    """Start ``memory-pipeline ingest``, wait until it reaches ``fault``, SIGKILL it."""
    marker = home / f"reached-{fault.replace(':', '-')}"
    env = {
        **os.environ,
        "MEMORY_PIPELINE_ROOT": str(root),
        "MEMORY_PIPELINE_LANCEDB_URI": lance_uri,
        "MEMORY_PIPELINE_EMBEDDER": "hash",
        "DAGSTER_HOME": str(home),
        "MEMORY_PIPELINE_FAULT": fault,
        "MEMORY_PIPELINE_FAULT_MARKER": str(marker),
    }
    env.pop("MEMORY_PIPELINE_FAULT_RELEASE", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "memory_pipeline.cli", "ingest", "--json"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 300
        while not marker.exists():
            if proc.poll() is not None:
                out, err = proc.communicate()
                raise AssertionError(f"the run ended before reaching {fault}: {err.decode()[-3000:]}")
            assert time.monotonic() < deadline, f"the run never reached {fault}"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return marker.read_text()


def check_results(result: dg.ExecuteInProcessResult) -> dict[str, bool]:
    return {
        e.asset_check_evaluation_data.check_name: e.asset_check_evaluation_data.passed
        for e in result.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION"
    }


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> dict[str, str]:
    """Clean runs on the first and the changed workspace: the index a rerun must equal."""
    base = tmp_path_factory.mktemp("clean")
    out = {}
    for stage in ("first", "changed"):
        root, uri = base / stage / "agents", str(base / stage / "lancedb")
        build_workspace(root)
        if stage == "changed":
            change_workspace(root)
        ingest_in_process(root, uri)
        out[stage] = uri
    chunks, _ = snapshot(out["first"])
    assert chunks.filter(pl.col("path").str.ends_with("big.jsonl")).height == BIG_SESSION_TURNS
    return out


@pytest.mark.parametrize("fault", ["after_embed_block:1", "write_batch:1", "after_chunks_commit:1"])
def test_killed_first_run_then_rerun_equals_a_clean_run(tmp_path, clean, fault):
    root, uri, home = tmp_path / "agents", str(tmp_path / "lancedb"), tmp_path / "home"
    home.mkdir()
    build_workspace(root)
    assert killed_run(root, uri, home, fault).startswith(fault)
    rerun = ingest_in_process(root, uri)
    assert rerun.success
    checks = check_results(rerun)
    assert len(checks) == 4 and all(checks.values()), checks
    assert_same_index(uri, clean["first"])


def test_killed_incremental_run_then_rerun_equals_a_clean_run(tmp_path, clean):
    """Changed, deleted and new files; killed inside the commit that replaces their chunks."""
    root, uri, home = tmp_path / "agents", str(tmp_path / "lancedb"), tmp_path / "home"
    home.mkdir()
    build_workspace(root)
    ingest_in_process(root, uri)
    change_workspace(root)
    killed_run(root, uri, home, "write_batch:1")
    chunks, _ = snapshot(uri)
    assert chunks["id"].is_unique().all()  # the killed commit left the old version whole
    rerun = ingest_in_process(root, uri)
    assert all(check_results(rerun).values())
    assert_same_index(uri, clean["changed"])
