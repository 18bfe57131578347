"""Recall's sources by name: the built-in ones (notes and transcripts, episodes) and those a slice
declares as an entry point of the package (group ``memory_pipeline.recall_sources`` in
pyproject.toml: typed memories declare ``facts``). The declared ones are loaded on the first
lookup, so every caller of recall (the Python API, the CLI, the MCP server) searches them with no
call to make first, and recall never imports a slice. A source can also join by
``register_source``.
"""

from __future__ import annotations

import logging
import threading

from memory_pipeline.recall.sources import ChunkSource, EpisodeSource, RecallSource

log = logging.getLogger(__name__)

_SOURCES: dict[str, RecallSource] = {}
SOURCE_ENTRY_POINTS = "memory_pipeline.recall_sources"
_declared: list[str] = []  # the group, once its entry points are loaded (once per process)
_declaring = threading.Lock()  # a second thread waits for the first one's loading


def register_source(source: RecallSource) -> None:
    """Make a source searchable by its names."""
    for name in source.names:
        _SOURCES[name] = source


def known_sources() -> dict[str, RecallSource]:
    """Every source by name: built in, declared by the package (read on the first call, ~3 ms), registered."""
    with _declaring:
        if not _declared:
            _load_declared()
            _declared.append(SOURCE_ENTRY_POINTS)
    return dict(_SOURCES)


def _load_declared() -> None:
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        declared = list(distribution("memory_pipeline").entry_points.select(group=SOURCE_ENTRY_POINTS))
    except PackageNotFoundError:
        declared = []
    if not declared:  # never installed, or installed before the sources were declared
        log.warning("no recall source declared by an installed memory_pipeline (pip install -e . again): "
                    "typed memories (facts) are not searched")
    for entry in declared:
        register_source(entry.load())


register_source(ChunkSource())
register_source(EpisodeSource())
