"""Which live sessions need a compaction flush now: the plan the ``flush_sensor`` follows.

An agent compacts its context when a session grows long; before it does, the key facts of the
history must be in the tenant's dated note. A live (not yet completed) session is due each time
the messages since its last compaction pass another multiple of ``messages`` (50 by default), or
their estimated tokens another multiple of ``share`` x ``context_tokens`` (85 % of 128,000): one
flush per crossing, covering the messages since the previous flush. The sensor's cursor holds,
per live transcript, its fingerprint, compactions, crossings and the turns already flushed, so a
tick where nothing grew reads nothing and requests nothing; a completed session leaves the cursor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from memory_pipeline.config import Settings
from memory_pipeline.episodes.sessions import SessionFile, load_session
from memory_pipeline.text.turns import Transcript, Turn

CHARS_PER_TOKEN = 4
"""Token estimate without a tokenizer: the sensor must stay cheap, and a threshold does not need
exact counts (English text runs at about four characters per token with BPE tokenizers)."""


@dataclass(frozen=True)
class FlushThresholds:
    messages: int = 50
    tokens: int = 108_800  # 85 % of 128,000

    @classmethod
    def from_settings(cls, settings: Settings) -> "FlushThresholds":
        tokens = max(1, math.floor(settings.flush_context_share * settings.flush_context_tokens))
        return cls(messages=settings.flush_messages, tokens=tokens)


@dataclass(frozen=True)
class FlushDue:
    """Turns ``start`` to ``end`` (indexes into the transcript's turns) of one live session."""

    path: str
    tenant: str
    start: int
    end: int
    messages: int
    tokens: int
    crossing: int
    compactions: int


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def since_last_compaction(transcript: Transcript) -> list[Turn]:
    last = transcript.compactions[-1][0] if transcript.compactions else 0
    return [t for t in transcript.turns if t.line > last]


def crossing(turns: list[Turn], thresholds: FlushThresholds) -> tuple[int, int, int]:
    """(messages, estimated tokens, thresholds crossed so far) of the turns since the last compaction."""
    tokens = sum(estimate_tokens(t.content) for t in turns)
    return len(turns), tokens, max(len(turns) // thresholds.messages, tokens // thresholds.tokens)


def plan_flushes(
    root: Path, files: list[SessionFile], cursor: dict, now: datetime, idle: timedelta, thresholds: FlushThresholds
) -> tuple[list[FlushDue], dict, list[str]]:
    """(flushes due now, new cursor, notes). Only transcripts written within the idle timeout can
    be live, so older ones are not read at all."""
    seen = cursor.get("live", {})
    new: dict[str, list] = {}
    due: list[FlushDue] = []
    notes: list[str] = []
    for file in files:
        if now - file.modified_at >= idle:
            continue  # complete by the idle rule, or about to be: consolidation's work now
        previous = seen.get(file.path)
        if previous and previous[0] == file.fingerprint:
            new[file.path] = previous
            continue
        session = load_session(root, file, now, idle)
        if isinstance(session, str):
            notes.append(f"{file.path}: {session}")
            continue
        if session.is_complete:
            continue
        turns = since_last_compaction(session.transcript)
        messages, tokens, crossed = crossing(turns, thresholds)
        compactions = len(session.transcript.compactions)
        first = len(session.transcript.turns) - len(turns)
        done, flushed = 0, first
        if previous and previous[1] == compactions:
            done, flushed = previous[2], previous[3]
        end = len(session.transcript.turns)
        if crossed > done and end > flushed:
            due.append(FlushDue(file.path, file.tenant.key, flushed, end, messages, tokens, crossed, compactions))
            done, flushed = crossed, end
        new[file.path] = [file.fingerprint, compactions, done, flushed]
    return due, {"live": new}, notes
