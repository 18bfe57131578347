"""The ``memory-pipeline`` command line: one module per area, one vocabulary.

``app`` (in ``cli/app.py``) holds the global flags and the error handling; each area module adds
its commands to it when imported. Nothing outside this package imports it.
"""

from __future__ import annotations

from memory_pipeline.cli.app import app

# Imported for the commands they add to ``app``.
# In the order --help lists them.
from memory_pipeline.cli import index, recall, consolidation, memories, forget, mcp, demo, evaluate  # noqa: E402,F401,I001


def main() -> None:
    app(prog_name="memory-pipeline")


__all__ = ["app", "main"]
