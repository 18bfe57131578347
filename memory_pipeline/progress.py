"""Progress of long steps, for whoever shows it; nothing is shown by default.

A step calls ``advance("chunks embedded", n, total)`` as it goes; a listener installed with
``listening(fn)`` receives each call in the same process (the command line runs Dagster's
in-process executor, so the steps run where its progress bars are drawn). With no listener a
call costs one empty loop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

Listener = Callable[[str, int, "int | None"], None]
_listeners: list[Listener] = []


def advance(stage: str, n: int = 1, total: int | None = None) -> None:
    """``n`` more units of ``stage`` are done (of ``total`` in this step, when known)."""
    for listener in tuple(_listeners):
        listener(stage, n, total)


@contextmanager
def listening(listener: Listener) -> Iterator[None]:
    _listeners.append(listener)
    try:
        yield
    finally:
        _listeners.remove(listener)
