"""Consolidation: completed sessions become episodes (L1), a temporal knowledge graph (L2) and
dreamed long-term Markdown that flows back into the L0 index."""
