"""Wiring the slices into recall: every recall source a slice provides, registered in one place.

``recall`` ships the sources over L0 chunks and episodes and never imports a slice; typed
memories (the ``memories`` slice) join it here as the ``facts`` source. Every entry point that
recalls (the CLI, the MCP server, the demo, the LoCoMo evaluation) calls ``assemble()`` first.
"""

from __future__ import annotations

from memory_pipeline.memories.recall_source import FACTS
from memory_pipeline.recall.sources import known_sources, register_source


def assemble() -> None:
    """Register every recall source (once; later calls do nothing)."""
    if not set(FACTS.names) <= set(known_sources()):
        register_source(FACTS)
