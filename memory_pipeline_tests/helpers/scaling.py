"""How a function's CPU time grows with its input, measured within one test.

Tests never assert absolute times (they say more about the machine's load than about the code;
absolute speed is measured by ``bench/``). What a test can hold is the shape: a scan that is
linear takes about ``factor`` times as long on an input ``factor`` times larger, while a regular
expression that backtracks, or a loop that copies what it has built, takes ``factor`` squared.
"""

from __future__ import annotations

import time
from collections.abc import Callable


def _best_cpu_seconds(run: Callable[[], object], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.process_time()
        run()
        best = min(best, time.process_time() - started)
    return best


def growth(run: Callable[[str], object], make: Callable[[int], str], size: int, factor: int = 4, repeats: int = 3) -> float:
    """CPU time on ``make(size * factor)`` over CPU time on ``make(size)``, the best of ``repeats``
    each (a linear function gives about ``factor``, a quadratic one about ``factor ** 2``)."""
    small, large = make(size), make(size * factor)
    run(small[:1000])  # warm caches (compiled patterns, lazy imports) outside the measurement
    return _best_cpu_seconds(lambda: run(large), repeats) / max(_best_cpu_seconds(lambda: run(small), repeats), 1e-4)
