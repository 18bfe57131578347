"""``python -m memory_pipeline.cli``: the same as the ``memory-pipeline`` command."""

from memory_pipeline.cli import main

main()
