"""The benchmark suite: `python -m bench` (see bench/run_all.py and bench/README.md)."""

from __future__ import annotations


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
