"""The benchmark suite's quick mode as a regression guard.

``python -m bench --quick`` ingests a small generated workspace through the real Dagster job
beside the bare embedder, and searches a 20,000-chunk tenant through the IVF index beside the
exact scan. It fails only when a ratio measured within that one run (pipeline vs. bare embedder
throughput, no-change rerun vs. full ingest time, IVF recall@10 vs. exact scan) falls far past
its committed value in ``bench/baseline.json``: never on absolute times, which say more about
the machine's load than about the code. The guard's own arithmetic is tested without running
anything.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import host_steal_s, steal_since
from bench.run_all import BASELINE, check_against_baseline, guarded_ratios

REPO = Path(__file__).resolve().parents[2]


def test_baseline_holds_every_guarded_ratio():
    baseline = json.loads(BASELINE.read_text())
    assert set(baseline["ratios"]) == {"ingest_vs_bare_throughput", "rerun_vs_full_time", "ann_recall_at_10_vs_exact"}
    assert 0 < baseline["tolerance"] <= 1


def test_guard_fails_only_far_past_the_committed_ratio():
    baseline = {"tolerance": 0.5, "ratios": {"ingest_vs_bare_throughput": 0.9, "rerun_vs_full_time": 0.1}}
    assert check_against_baseline({"ingest_vs_bare_throughput": 0.5, "rerun_vs_full_time": 0.19}, baseline) == []
    failures = check_against_baseline({"ingest_vs_bare_throughput": 0.4, "rerun_vs_full_time": 0.21}, baseline)
    assert [f.split(" ")[0] for f in failures] == ["ingest_vs_bare_throughput", "rerun_vs_full_time"]
    assert check_against_baseline({}, baseline) == ["ingest_vs_bare_throughput: not measured", "rerun_vs_full_time: not measured"]


def test_guarded_ratios_take_the_worst_size():
    results = {
        "ingest": {"ratios": {"ingest_vs_bare_throughput": 0.95, "rerun_vs_full_time": 0.05}},
        "recall": {"sizes": {"10": {"ratios": {"ann_recall_at_10_vs_exact": 0.99}},
                             "20": {"ratios": {"ann_recall_at_10_vs_exact": 0.97}}}},
    }
    assert guarded_ratios(results) == {
        "ingest_vs_bare_throughput": 0.95, "rerun_vs_full_time": 0.05, "ann_recall_at_10_vs_exact": 0.97,
    }


def test_host_steal_is_read_from_proc_stat():
    first = host_steal_s()
    if not Path("/proc/stat").exists():
        assert first is None
        return
    fields = Path("/proc/stat").read_text().splitlines()[0].split()
    assert first == pytest.approx(int(fields[8]) / os.sysconf("SC_CLK_TCK"), abs=1.0)
    assert steal_since(first) >= 0
    assert steal_since(None) is None


@pytest.mark.slow
@pytest.mark.timeout(3600)  # minutes when quiet; far more under load, which must not fail it
def test_quick_benchmark_ratios_hold(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "MPLBACKEND": "Agg"}
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--out", str(tmp_path)],
        cwd=REPO, env=env, capture_output=True, text=True, check=False,
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    for name in ("ingest", "recall", "machine"):
        assert (tmp_path / f"{name}.json").exists()
    runs = json.loads((tmp_path / "machine.json").read_text())["runs"]
    if Path("/proc/stat").exists():  # each benchmark's figures carry what the host took meanwhile
        assert all(run["host_steal_s"] >= 0 for run in runs.values())
        timed = json.loads((tmp_path / "recall.json").read_text())["sizes"]["20000"]["retrieval"]
        assert timed["host_steal_s"] >= 0 and timed["n"] == 40
    assert (tmp_path / "ingest.png").stat().st_size < 200_000
