"""Run every benchmark, plot the results and regenerate ``bench/README.md``.

    python -m bench                 # the full suite (about 30 minutes here), README included
    python -m bench --quick         # about 2 minutes: small sizes, checked against baseline.json
    python -m bench --only recall   # one benchmark (results and plots; README from what exists)

Each benchmark runs as its own process (``bench/<name>.py``) and writes
``<out>/<name>.json``; this script adds ``machine.json`` (CPU, cores, RAM, versions, load),
draws ``<out>/*.png`` and, in the full mode, rewrites ``bench/README.md`` from the JSON.

The quick mode is the regression guard CI runs: it fails only when a ratio measured within the
run (pipeline vs. bare embedder throughput, ANN recall@10 vs. the exact scan, no-change rerun vs.
full ingest time) falls far below the value committed in ``bench/baseline.json``; absolute times
are never compared, since they say more about the machine's load than about the code.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench import host_steal_s, steal_since  # noqa: E402

RESULTS = HERE / "results"
BASELINE = HERE / "baseline.json"

FULL = {
    "ingest": ["--files", "2000", "--tenants", "20"],
    "recall": ["--sizes", "10000,100000,1000000", "--queries", "200"],
    "memory": ["--chunks", "1000000", "--tenants", "10"],
    "consolidate": ["--spacy-repeats", "1", "--dagster-modes", "launch"],
    "oneshot": ["--chunks", "10000", "--runs", "7"],
}
QUICK = {
    "ingest": ["--quick"],
    "recall": ["--quick"],
}

# name -> (benchmark, path of keys in its JSON, which way is better)
GUARDED = {
    "ingest_vs_bare_throughput": ("ingest", ("ratios", "ingest_vs_bare_throughput"), "higher"),
    "rerun_vs_full_time": ("ingest", ("ratios", "rerun_vs_full_time"), "lower"),
    "ann_recall_at_10_vs_exact": ("recall", ("sizes", "*", "ratios", "ann_recall_at_10_vs_exact"), "higher"),
}

VERSIONS = ("dagster", "lancedb", "pylance", "pyarrow", "polars", "numpy", "torch", "sentence-transformers", "spacy")


def machine() -> dict:
    cpu = "unknown"
    flags: set[str] = set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and cpu == "unknown":
                cpu = value.strip()
            if key.strip() == "flags" and not flags:
                flags = set(value.split())
    except OSError:
        pass
    try:
        import psutil

        ram_gb = round(psutil.virtual_memory().total / 2**30, 1)
        physical = psutil.cpu_count(logical=False)
    except ImportError:  # pragma: no cover
        ram_gb, physical = None, None
    versions = {}
    for name in VERSIONS:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return {
        "cpu": cpu,
        "logical_cores": os.cpu_count(),
        "physical_cores": physical,
        "simd": [f for f in ("avx2", "avx512f", "avx512_vnni", "fma") if f in flags],
        "ram_gb": ram_gb,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "versions": versions,
    }


def run_benchmark(name: str, args: list[str], out: Path, log) -> dict:
    """Run one benchmark in its own process. What earlier ones wrote (the recall and memory
    benchmarks each write gigabytes) is on disk first, so the kernel does not write it back
    during this one's timings; the CPU time the host took from the machine meanwhile is kept
    beside the load (``host_steal_s``)."""
    cmd = [sys.executable, str(HERE / f"{name}.py"), *args, "--out", str(out / f"{name}.json")]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "LANCE_LOG": "error"}
    if hasattr(os, "sync"):
        os.sync()
    started = time.perf_counter()
    steal = host_steal_s()
    load = os.getloadavg()
    print(f"== {name}: {' '.join(cmd[1:])}  (load {load[0]:.1f})", flush=True)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=HERE.parent)
    for line in proc.stdout:
        if " WARN " not in line:  # LanceDB's deprecation chatter
            sys.stdout.write("   " + line)
        log.write(line)
    code = proc.wait()
    seconds = time.perf_counter() - started
    if code != 0:
        raise SystemExit(f"benchmark {name} failed (exit {code}); see the log above")
    return {"seconds": round(seconds, 1), "finished": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "load_average_at_start": [round(x, 2) for x in load],
            "load_average_at_end": [round(x, 2) for x in os.getloadavg()], "host_steal_s": steal_since(steal),
            "command": f"python bench/{name}.py {' '.join(args)}"}


def _values(data, path):
    """Every value at ``path`` in nested dicts; ``*`` matches every key."""
    if not path:
        return [data]
    head, rest = path[0], path[1:]
    if not isinstance(data, dict):
        return []
    if head == "*":
        return [v for key in data for v in _values(data[key], rest)]
    return _values(data[head], rest) if head in data else []


def guarded_ratios(results: dict) -> dict[str, float]:
    out = {}
    for name, (bench, path, _) in GUARDED.items():
        values = _values(results.get(bench, {}), path)
        if values:
            out[name] = float(min(values) if GUARDED[name][2] == "higher" else max(values))
    return out


def check_against_baseline(measured: dict[str, float], baseline: dict) -> list[str]:
    """Ratios that fell far below their committed value (by more than the tolerance)."""
    tolerance = baseline.get("tolerance", 0.5)
    failures = []
    for name, committed in baseline["ratios"].items():
        if name not in measured:
            failures.append(f"{name}: not measured")
            continue
        value, better = measured[name], GUARDED[name][2]
        if better == "higher" and value < committed * tolerance:
            failures.append(f"{name} = {value:.3f}, below {tolerance:.0%} of the committed {committed:.3f}")
        if better == "lower" and value > committed / tolerance:
            failures.append(f"{name} = {value:.3f}, above the committed {committed:.3f} / {tolerance:.0%}")
    return failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes, about 2 minutes; checks baseline.json")
    parser.add_argument("--only", help="comma-separated benchmarks to run (ingest, recall, memory, consolidate, oneshot)")
    parser.add_argument("--out", help="results folder (default bench/results, or a temporary one with --quick)")
    parser.add_argument("--no-readme", action="store_true", help="do not rewrite bench/README.md")
    parser.add_argument("--write-baseline", action="store_true", help="commit this quick run's ratios as the baseline")
    parser.add_argument("--report-only", action="store_true", help="redraw plots and README from existing results")
    parser.add_argument("--ingest-files", type=int, help="files of the full ingest (default 2000)")
    parser.add_argument("--recall-queries", type=int, help="queries per recall size (default 200)")
    parser.add_argument("--memory-chunks", type=int, help="chunks of the memory benchmark (default 1,000,000)")
    opts = parser.parse_args(argv)
    plan = QUICK if opts.quick else FULL
    if opts.only:
        wanted = opts.only.split(",")
        unknown = [w for w in wanted if w not in FULL]
        if unknown:
            parser.error(f"unknown benchmark(s) {unknown}: choose from {', '.join(FULL)}")
        plan = {k: v for k, v in plan.items() if k in wanted}
    if opts.report_only:
        plan = {}
    if opts.ingest_files and "ingest" in plan and not opts.quick:
        plan["ingest"] = ["--files", str(opts.ingest_files), "--tenants", "20"]
    if opts.memory_chunks and "memory" in plan:
        plan["memory"] = ["--chunks", str(opts.memory_chunks), "--tenants", "10"]
    if opts.recall_queries and "recall" in plan and not opts.quick:
        plan["recall"] = [*plan["recall"][:2], "--queries", str(opts.recall_queries)]
    if opts.out:
        out = Path(opts.out)
    elif opts.quick:
        import tempfile

        out = Path(tempfile.mkdtemp(prefix="mp-bench-quick-"))
    else:
        out = RESULTS
    out.mkdir(parents=True, exist_ok=True)

    started = time.perf_counter()
    runs_path = out / "machine.json"
    partial = bool(opts.only or opts.report_only)
    for name, args in plan.items():
        with open(out / f"{name}.log", "w") as log:
            run = run_benchmark(name, args, out, log)
        # Re-read before writing: a benchmark may have been run alone meanwhile (--only).
        info = json.loads(runs_path.read_text()) if runs_path.exists() and partial else {"runs": {}}
        info.update(machine=machine(), date=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), quick=opts.quick)
        info["runs"][name] = run
        runs_path.write_text(json.dumps(info, indent=2))
        partial = True
    info = json.loads(runs_path.read_text()) if runs_path.exists() else {"machine": machine(), "runs": {}}
    if plan and not opts.only:
        info["suite_seconds"] = round(time.perf_counter() - started, 1)
    runs_path.write_text(json.dumps(info, indent=2))

    results = {name: json.loads((out / f"{name}.json").read_text()) for name in FULL if (out / f"{name}.json").exists()}
    from bench.plots import draw_all

    results = {k: v for k, v in results.items() if k in info["runs"]}  # only what this suite ran
    for png in draw_all(results, out):
        print(f"plot: {png} ({png.stat().st_size // 1024} KB)")
    if not opts.quick and not opts.no_readme and out == RESULTS:
        from bench.report import write_readme

        write_readme(results, info, HERE / "README.md")
        print(f"wrote {HERE / 'README.md'}")

    measured = guarded_ratios(results)
    print("ratios: " + ", ".join(f"{k} {v:.3f}" for k, v in measured.items()))
    print(f"suite: {time.perf_counter() - started:.0f} s")
    if opts.quick:
        if opts.write_baseline:
            BASELINE.write_text(json.dumps({
                "about": "Ratios from `python -m bench --quick` on the machine in bench/README.md; the quick "
                         "test fails when one falls past the tolerance (a fraction of the committed value).",
                "tolerance": 0.5,
                "ratios": {k: round(v, 3) for k, v in measured.items()},
            }, indent=2) + "\n")
            print(f"wrote {BASELINE}")
        failures = check_against_baseline(measured, json.loads(BASELINE.read_text()))
        for failure in failures:
            print(f"REGRESSION: {failure}")
        return 1 if failures else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
