"""Proves: a forget lets the tenant's run in flight finish before it deletes anything, so nothing
the run writes survives it and the run does not fail; a run still going after the wait stops the
forget with a message, before anything is deleted.

Before, a forget during a run for the same tenant deleted first; the run then wrote its rows for
the forgotten tenant and failed on its deleted partition.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from memory_pipeline.forget import forget_tenant
from memory_pipeline.l0.store import ChunkIndex
from memory_pipeline.orchestration.instance import run_workers
from memory_pipeline.orchestration.instance.run_workers import RunsStillInFlight
from memory_pipeline.orchestration.partitions import TENANTS_PARTITION
from memory_pipeline.orchestration.runs import local_instance
from memory_pipeline_tests.helpers import write

REPO = Path(__file__).resolve().parents[2]
ANA = "bot~ana"


def _tenant_rows(lance_uri: str) -> dict[str, int]:
    chunks = ChunkIndex(lance_uri).chunks().search().select(["tenant"]).limit(None).to_arrow()
    keys = chunks.column("tenant").to_pylist()
    return {key: keys.count(key) for key in sorted(set(keys))}


def test_a_forget_waits_for_the_tenants_run_and_leaves_nothing_it_wrote(tmp_path, monkeypatch):
    root, lance_uri, home = tmp_path / "agents", str(tmp_path / "lancedb"), tmp_path / "home"
    write(root, "bot/users/ana/MEMORY.md", "# Ana\n\nAna keeps bees on the roof of the depot.\n")
    write(root, "bot/users/ben/MEMORY.md", "# Ben\n\nBen repairs bicycles on Saturdays.\n")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    instance = local_instance(home)
    marker, release = tmp_path / "reached", tmp_path / "release"
    env = {
        **os.environ, "PYTHONPATH": str(REPO), "MEMORY_PIPELINE_ROOT": str(root), "MEMORY_PIPELINE_LANCEDB_URI": lance_uri,
        "MEMORY_PIPELINE_EMBEDDER": "hash", "DAGSTER_HOME": str(home), "MEMORY_PIPELINE_FAULT": "before_chunks_commit:1",
        "MEMORY_PIPELINE_FAULT_MARKER": str(marker), "MEMORY_PIPELINE_FAULT_RELEASE": str(release),
    }
    ingest = subprocess.Popen(
        [sys.executable, "-m", "memory_pipeline.cli", "ingest", "-a", "bot", "-u", "ana"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 300
        while not marker.exists():  # the run is about to write Ana's chunks
            assert ingest.poll() is None, ingest.communicate()[1].decode()[-2000:]
            assert time.monotonic() < deadline, "the ingest never reached its chunk commit"
            time.sleep(0.05)

        with pytest.raises(RunsStillInFlight, match="nothing was deleted"):
            forget_tenant("bot", "ana", root=root, lancedb_uri=lance_uri, instance=instance, wait_for_runs_s=0.2)
        assert ANA in instance.get_dynamic_partitions(TENANTS_PARTITION)

        # The run is let go once the forget is seen waiting for it.
        waiting = threading.Event()
        sleep = time.sleep
        monkeypatch.setattr(run_workers.time, "sleep", lambda s: (waiting.set(), sleep(s)))
        outcome: dict = {}
        forget = threading.Thread(target=lambda: outcome.update(report=forget_tenant(
            "bot", "ana", root=root, lancedb_uri=lance_uri, instance=instance, wait_for_runs_s=300,
        )))
        forget.start()
        assert waiting.wait(300), "the forget never waited for the run"
        release.write_text("go")
        forget.join(600)
        _, err = ingest.communicate(timeout=300)
    finally:
        if ingest.poll() is None:
            ingest.kill()
            ingest.wait()
    assert ingest.returncode == 0, err.decode()[-2000:]
    report = outcome["report"]
    assert len(report.runs_waited_for) == 1 and report.runs_deleted == 1
    assert report.rows_deleted["chunks"] == 1  # what the run wrote while the forget waited
    assert _tenant_rows(lance_uri) == {}
    assert ANA not in instance.get_dynamic_partitions(TENANTS_PARTITION)
