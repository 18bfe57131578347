"""Deterministic fault points for the crash and concurrency tests; inert unless configured.

``MEMORY_PIPELINE_FAULT=<point>:<n>`` makes the ``n``-th passage of this process through
``fault_point("<point>")`` write the file named by ``MEMORY_PIPELINE_FAULT_MARKER`` and then
block: a test waits for the marker and kills the process there (SIGKILL), at a known step. With
``MEMORY_PIPELINE_FAULT_RELEASE`` also set, the point blocks only until that file exists, which
lets a test line two processes up at the same step and release them together.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path

FAULT_ENV = "MEMORY_PIPELINE_FAULT"
MARKER_ENV = "MEMORY_PIPELINE_FAULT_MARKER"
RELEASE_ENV = "MEMORY_PIPELINE_FAULT_RELEASE"

_passes: Counter = Counter()


def fault_point(name: str) -> None:
    spec = os.environ.get(FAULT_ENV)
    if not spec:
        return
    point, _, nth = spec.partition(":")
    if point != name:
        return
    _passes[name] += 1
    if _passes[name] != int(nth or 1):
        return
    marker = os.environ.get(MARKER_ENV)
    if marker:
        Path(marker).write_text(f"{name}:{_passes[name]} pid {os.getpid()}\n")
    release = os.environ.get(RELEASE_ENV)
    while not (release and Path(release).exists()):
        time.sleep(0.02)
