"""The pipeline's commands run as a user runs them, for the evaluations: each ``memory-pipeline``
command in its own process, launching the Dagster jobs it launches for a user."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from memory_pipeline.tenancy import Tenant


class DreamingStalled(RuntimeError):
    """A dreaming run promoted nothing while episodes wait (a refused document, a failed run)."""


PIPELINE = (("ingest", "--all"), ("memories", "ingest", "--all"), ("consolidate", "--all"), ("dream", "--all"))
"""What a user runs, in order; ``dream --all`` dreams the tenants the sensor would (5 or more
unpromoted episodes)."""


def run_pipeline(root: Path, workdir: Path, embedder: str, log_path: Path,
                 commands: tuple[tuple[str, ...], ...] = PIPELINE, extra_env: dict | None = None) -> dict[str, float]:
    """Run ``commands`` as a user runs them: the ``memory-pipeline`` command in its own process,
    over the workspace ``root``, with LanceDB and the Dagster instance under ``workdir``. Each
    launches the same Dagster jobs the command launches for a user (the L0 index, typed memories,
    consolidation with supersession, dreaming). Returns each command's seconds; a failed command
    raises."""
    repo = str(Path(__file__).resolve().parents[2])
    env = {
        **os.environ,
        "MEMORY_PIPELINE_ROOT": str(root), "MEMORY_PIPELINE_LANCEDB_URI": str(workdir / "lancedb"),
        "MEMORY_PIPELINE_EMBEDDER": embedder, "DAGSTER_HOME": str(workdir / "dagster_home"),
        "PYTHONPATH": os.pathsep.join(p for p in (repo, os.environ.get("PYTHONPATH")) if p),
        **(extra_env or {}),
    }
    seconds = {}
    with log_path.open("a", encoding="utf-8") as log:
        for command in commands:
            log.write(f"$ memory-pipeline {' '.join(command)}\n")
            log.flush()
            started = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "memory_pipeline.cli", *command], env=env, cwd=workdir,
                                  stdout=log, stderr=log, check=False)
            seconds[" ".join(command)] = time.perf_counter() - started
            if done.returncode:
                raise RuntimeError(f"memory-pipeline {' '.join(command)} failed ({done.returncode}); see {log_path}")
    return seconds


def dream_all(root: Path, workdir: Path, embedder: str, log: Path, tenants: list[Tenant], store) -> int:
    """``memory-pipeline dream --force`` over the tenants (users of one agent), again while one has
    an unpromoted episode (a run promotes at most 10, as the sensor's runs do); the number of runs.
    ``store`` is the ``ConsolidationStore`` the commands write."""

    def pending() -> dict[str, int]:
        counts = store.unpromoted_counts()  # what the dreaming sensor reads
        return {t.key: counts[t.key] for t in tenants if counts.get(t.key)}

    runs, left = 0, pending()
    while left:
        users = [arg for t in tenants if t.key in left for arg in ("--user", t.user_id)]
        run_pipeline(root, workdir, embedder, log, (("dream", "--force", "--agent", tenants[0].agent_id, *users),))
        runs += 1
        still = pending()
        if still == left:  # nothing promoted: the log says why
            raise DreamingStalled(f"dreaming promoted no episode of {', '.join(left)}; see {log}")
        left = still
    return runs
