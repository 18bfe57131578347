"""A session as the text layer reads it: its turns, compaction summaries and what was skipped.

``sources.transcripts`` parses (and scrubs) the files into these; chunking, statements and
summaries read them, so the text layer needs nothing from ``sources``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class Turn:
    """One message of a session, as written in the transcript."""

    line: int  # 1-based line number in the file
    role: str  # speaker, as written ("user", "assistant", or a name like "Caroline")
    content: str
    ts: datetime | None  # timezone-aware UTC; None if missing or unparseable
    turn_id: str | None


@dataclass(frozen=True)
class Transcript:
    """The parsed lines of one session file, and the lines that could not be used."""

    turns: tuple[Turn, ...]
    compactions: tuple[tuple[int, str, datetime | None], ...]  # (line, summary, ts)
    completed_at: datetime | None
    skipped: tuple[tuple[int, str], ...]  # (line number, reason)
    secrets: dict[str, int] = field(default_factory=dict, compare=False)  # redacted, by type

    @property
    def last_activity(self) -> datetime | None:
        """The latest timestamp seen anywhere in the session, or None if it has none."""
        stamps = [t.ts for t in self.turns if t.ts is not None]
        stamps.extend(ts for _, _, ts in self.compactions if ts is not None)
        if self.completed_at is not None:
            stamps.append(self.completed_at)
        return max(stamps, default=None)
