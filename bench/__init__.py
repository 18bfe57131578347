"""The benchmark suite: `python -m bench` (see bench/run_all.py and bench/README.md)."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
"""The environment a benchmark's models load in: from the local cache, never the network, and with
the tokenizers' own parallelism off."""


def work_offline() -> None:
    """Sets ``OFFLINE`` in this process's environment where a variable is not set already; call it
    before a model library is imported."""
    for name, value in OFFLINE.items():
        os.environ.setdefault(name, value)


def host_steal_s() -> float | None:
    """CPU seconds the hypervisor has taken from this machine's cores since boot (psutil's
    ``cpu_times().steal``: the ``steal`` column of ``/proc/stat``, all cores together), or None
    where the system does not say.

    On a virtual machine a latency figure can be bent by the host: a query whose own CPU time is
    as usual takes twice as long when the host runs something else on its core. The difference
    of two readings says how much of a timed stretch the host took.
    """
    try:
        import psutil
    except ImportError:  # pragma: no cover - the bench extra installs it
        return None
    return getattr(psutil.cpu_times(), "steal", None)


def steal_since(start: float | None) -> float | None:
    """Seconds of ``host_steal_s`` since the reading ``start`` (None if either is unknown)."""
    now = host_steal_s()
    return None if start is None or now is None else round(now - start, 2)


def command_line(doc: str | None, name: str) -> argparse.ArgumentParser:
    """A benchmark's arguments: its module docstring as the help, and ``--out`` defaulting to
    ``bench/results/<name>.json``."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(RESULTS / f"{name}.json"))
    return parser


def write_report(out: str | Path, report: dict) -> None:
    """Writes a benchmark's report to ``out`` as indented JSON, making its folder."""
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(f"wrote {path}")
