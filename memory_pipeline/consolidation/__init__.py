"""Consolidation: completed sessions become episodes (L1), a temporal knowledge graph (L2) and
dreamed long-term Markdown that flows back into the L0 index.

The Dagster slice (assets, checks, sensors, schedules, launching runs) and its plain steps
(``pipeline``, ``supersession``) over the shared parts that do the work: ``episodes``,
``knowledge``, ``timeline`` and ``llm``."""
