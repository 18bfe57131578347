"""Typed memories: extracted from transcripts and notes, with an audit trail, typed queries,
bulletins and stats (the slice behind ``typed_memories`` and the MCP memory tools)."""
