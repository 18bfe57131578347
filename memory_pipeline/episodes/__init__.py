"""Episodes (L1) and the notes that grow from them: which sessions are complete (``sessions``),
their summaries (``summaries``), dreaming into long-term Markdown (``dreaming``, ``dream_lines``;
when a tenant dreams: ``dream_rules``) and the compaction flush of live sessions (``flush``,
``live_flush``); both read sentences through the one sentence classifier, ``text.memory_types``.
Plain functions; the consolidation slice runs them as assets."""
