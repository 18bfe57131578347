"""PNG plots of the benchmark results (matplotlib, Agg; small files for the README)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

DPI = 90
BLUE, ORANGE, GREEN, GREY, RED, PURPLE = "#3b6ea8", "#e08a2c", "#4f9a55", "#9a9a9a", "#b8433a", "#7a5195"


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def ingest(result: dict, out: Path) -> Path:
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.4))
    tokens = result["bare"]["tokens"]
    rates = [tokens / result["bare"]["seconds"], tokens / result["full"]["seconds"]]
    bars = left.bar(["bare embedder", "pipeline\n(Dagster run)"], rates, color=[GREY, BLUE])
    left.bar_label(bars, labels=[f"{r:,.0f}" for r in rates])
    left.set_ylabel("tokens / s")
    left.set_title(f"Full ingest: ratio {result['ratios']['ingest_vs_bare_throughput']:.2f} (target 0.90)", fontsize=10)
    runs = [("full", "full", BLUE), ("1% changed", "changed", ORANGE), ("no change", "rerun", GREEN)]
    runs = [run for run in runs if run[1] in result]  # the quick mode has no 1%-changed run
    times = [result[key]["seconds"] for _, key, _ in runs]
    bars = right.bar([label for label, _, _ in runs], times, color=[color for _, _, color in runs])
    right.bar_label(bars, labels=[f"{t:.1f} s ({t / times[0]:.1%})" for t in times], fontsize=8)
    right.set_ylim(0, max(times) * 1.2)
    right.set_ylabel("seconds")
    right.set_title(f"{result['workspace']['files']:,} files: run time vs. full ingest", fontsize=10)
    return _save(fig, out / "ingest.png")


def recall(result: dict, out: Path) -> Path:
    sizes = sorted(result["sizes"], key=int)
    x = [int(s) for s in sizes]
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.6), gridspec_kw={"width_ratios": [3, 2]})
    series = [
        ("search (with query embedding)", "search", BLUE, "-"),
        ("retrieval (search minus embedding)", "retrieval", ORANGE, "-"),
        ("exact NumPy scan", "numpy", GREY, "--"),
        ("IVF alone", "ann", GREEN, "-"),
        ("full-text, in-memory BM25", "text", PURPLE, "-"),
        ("full-text, LanceDB", "fts", PURPLE, ":"),
        ("LanceDB flat scan", "lancedb_flat", RED, ":"),
    ]
    series = [s for s in series if all(s[1] in result["sizes"][size] for size in sizes)]
    for label, key, color, style in series:
        left.plot(x, [result["sizes"][s][key]["p95"] for s in sizes], style, color=color, marker="o", label=f"{label} p95")
        left.plot(x, [result["sizes"][s][key]["p50"] for s in sizes], style, color=color, marker=".", alpha=0.4)
    left.axhline(40, color="black", linewidth=0.8, linestyle="--")
    left.text(x[-1], 44, "40 ms target at 1M", fontsize=8, ha="right")
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_xlabel("chunks in the tenant")
    left.set_ylabel("ms (dots: p50)")
    left.set_title("Recall latency p95 vs. index size", fontsize=10)
    left.legend(fontsize=7, loc="lower right")
    recalls = [result["sizes"][s]["ann"]["recall_at_10"] for s in sizes]
    bars = right.bar([f"{int(s):,}" for s in sizes], recalls, color=GREEN)
    right.bar_label(bars, labels=[f"{r:.3f}" for r in recalls])
    right.axhline(0.95, color="black", linewidth=0.8, linestyle="--")
    right.set_ylim(0, 1.08)
    right.set_xlabel("chunks")
    right.set_title("IVF recall@10 vs. exact scan (target 0.95)", fontsize=10)
    return _save(fig, out / "recall.png")


def memory(result: dict, out: Path) -> Path:
    fig, ax = plt.subplots(figsize=(7, 3.4))
    peaks = result["rss_mb"]["peak_by_phase"]
    phases = [p for p in ("prepare", "embed", "write", "index") if p in peaks]
    bars = ax.bar(phases, [peaks[p] for p in phases], color=[GREY, BLUE, ORANGE, GREEN][: len(phases)])
    ax.bar_label(bars, labels=[f"{peaks[p]:,.0f}" for p in phases])
    base = result["rss_mb"]["after_prepare"]
    ax.axhline(base + result["all_vectors_mb"], color=RED, linestyle="--", linewidth=1)
    ax.text(-0.4, base + result["all_vectors_mb"] * 1.02, "after chunking + every vector held at once", fontsize=8, color=RED)
    ax.axhline(base, color="black", linewidth=0.8)
    ax.set_ylabel("peak RSS, MB")
    ax.set_title(f"Ingest of {result['chunks']:,} chunks: peak RSS by phase", fontsize=10)
    return _save(fig, out / "memory.png")


def consolidate(result: dict, out: Path) -> Path:
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.2))
    labels = ["plain functions"] + list(result["dagster"])
    rates = [result["functions"]["sessions_per_min"]] + [m["sessions_per_min"] for m in result["dagster"].values()]
    bars = left.barh([label.replace(", ", "\n") for label in labels], rates, color=[GREY] + [BLUE] * (len(labels) - 1))
    left.bar_label(bars, labels=[f"{r:.0f}" for r in rates])
    left.set_xlabel("sessions / minute")
    left.set_title("Consolidation throughput", fontsize=10)
    left.tick_params(axis="y", labelsize=7)
    configs = result["spacy"]["configs"]
    bars = right.barh(list(configs), [c["docs_per_s"] for c in configs.values()], color=ORANGE)
    right.bar_label(bars, labels=[f"{c['docs_per_s']:.0f}" for c in configs.values()])
    right.set_xlabel("docs / s")
    right.set_title("spaCy by configuration", fontsize=10)
    right.tick_params(axis="y", labelsize=7)
    return _save(fig, out / "consolidate.png")


def draw_all(results: dict, out: Path) -> list[Path]:
    drawn = []
    for name, draw in (("ingest", ingest), ("recall", recall), ("memory", memory), ("consolidate", consolidate)):
        if name in results:
            drawn.append(draw(results[name], out))
    return drawn
