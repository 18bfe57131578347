"""The ``memory-pipeline graph`` commands (typed memories live in ``memory_pipeline.memories``)."""
