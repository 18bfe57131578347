"""Episodes (L1) and the notes that grow from them: which sessions are complete (``sessions``),
their summaries (``summaries``), dreaming into long-term Markdown (``dreaming``, ``dream_lines``)
and the compaction flush of live sessions (``flush``, ``live_flush``, with the ``cues`` both read).
Plain functions; the consolidation slice runs them as assets."""
