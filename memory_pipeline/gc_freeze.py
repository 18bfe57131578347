"""Loaded models kept out of the garbage collector's passes.

A process loads the spaCy pipeline and the embedding model once and keeps them to its end, yet
every full collection walks their objects again (about 770,000 with the consolidation's models,
Dagster and its definitions): in launches of the LoCoMo dev sessions' consolidation, where
Dagster's events keep the collector busy, collections took 0.47-0.62 s, and 0.17-0.23 s with what
was alive once the models were loaded moved out of its view (``gc.freeze``).
"""

from __future__ import annotations

import gc
from typing import TypeVar

T = TypeVar("T")


def kept_for_the_process(model: T) -> T:
    """``model``, with every object alive now (the model, the modules and definitions loaded before
    it) moved to the collector's permanent generation: never collected, never walked again."""
    gc.freeze()
    return model
