"""Session transcripts: one JSON object per line, parsed without ever raising.

A transcript (``<agent>/sessions/<user>/<session_id>.jsonl``) holds message lines
(``{"role", "content", "ts", "turn_id"}``, optionally ``"type": "message"``), compaction summaries
(``{"type": "compaction", "summary", "ts"}``) and a closing ``{"type": "session.completed"}``.
Files are read while an agent may still be writing them, so a half-written last line, or any
other malformed line, is recorded in ``Transcript.skipped`` with its line number and a reason
instead of failing the whole session.

Every text a transcript hands on is scrubbed of secrets here, where it enters the pipeline: the
content, the role, the turn id, compaction summaries and the skip reasons (which may echo a
field's value). ``Transcript.secrets`` counts what was redacted, by type.

Lines are numbered the way Python's universal newlines count them (``\\n``, ``\\r\\n``, ``\\r``),
which is also how ``chunking.split_lines`` and ``Path.read_text`` see the file.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from dateutil import parser as date_parser

from memory_pipeline.config import get_settings
from memory_pipeline.sources.workspace import read_text_file
from memory_pipeline.text.scrub import scrub_secrets
from memory_pipeline.text.turns import Transcript, Turn

MESSAGE = "message"
COMPACTION = "compaction"
SESSION_COMPLETED = "session.completed"

# Epoch numbers above this are taken as milliseconds: 1e11 seconds is the year 5138.
_EPOCH_MS_THRESHOLD = 1e11
_NUMERIC_RE = re.compile(r"^[+-]?\d+(?:\.\d+)?$")
_YEAR_RE = re.compile(r"\d{4}")
_NEWLINE_RE = re.compile(r"\r\n|\r|\n")


def parse_timestamp(value: Any) -> datetime | None:
    """A timezone-aware UTC datetime from an ISO-8601 string or epoch number, else None.

    Naive times are taken as UTC. Numbers (or numeric strings) are epoch seconds, or
    milliseconds when too large to be seconds. Never raises.
    """
    try:
        return _parse_timestamp(value)
    except (ValueError, OverflowError, OSError, TypeError, ArithmeticError):
        return None


def _parse_timestamp(value: Any) -> datetime | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return _from_epoch(float(value))
    if not isinstance(value, str):
        return None
    text = value.strip()
    if not text or len(text) > 64:
        return None
    if _NUMERIC_RE.match(text):
        return _from_epoch(float(text))
    try:
        parsed = date_parser.isoparse(text)
    except (ValueError, OverflowError):
        # RFC 2822 and similar forms; only when a year is present, because dateutil fills
        # missing fields from today (so "5" would silently mean the 5th of this month).
        if not _YEAR_RE.search(text):
            return None
        parsed = date_parser.parse(text)
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=timezone.utc)
    return parsed.astimezone(timezone.utc)


def _from_epoch(seconds: float) -> datetime | None:
    if not math.isfinite(seconds):
        return None
    if abs(seconds) >= _EPOCH_MS_THRESHOLD:
        seconds /= 1000.0
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


class _SkipLine(Exception):
    """A line that cannot be used; the message is the reason recorded in ``skipped``."""


def _content_text(content: Any) -> str:
    """The text of a message: a string, or the joined texts of a list of content parts."""
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and part.get("type", "text") == "text":
                piece = part.get("text")
                if isinstance(piece, str):
                    parts.append(piece)
            # Images, tool calls and other non-text parts carry nothing to index.
        text = "\n".join(p for p in parts if p.strip())
    elif content is None:
        raise _SkipLine("missing 'content'")
    else:
        raise _SkipLine(f"'content' must be a string or a list of parts, not {_kind(content)}")
    if not text.strip():
        raise _SkipLine("empty 'content'")
    return text


def _turn_id(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise _SkipLine("'turn_id' must be a string, not a boolean")
    if isinstance(value, int):
        return str(value)
    if not isinstance(value, str):
        raise _SkipLine(f"'turn_id' must be a string, not {_kind(value)}")
    return value or None


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "null" if value is None else "a number"
    )


def _read_line(raw: str, is_last: bool) -> dict:
    try:
        record = json.loads(raw)
    except RecursionError:
        raise _SkipLine("not valid JSON: nested too deeply") from None
    except ValueError as exc:
        if is_last:
            raise _SkipLine(
                f"incomplete last line, the file may still be written ({exc})"
            ) from None
        raise _SkipLine(f"not valid JSON ({exc})") from None
    if not isinstance(record, dict):
        raise _SkipLine(f"expected a JSON object, got {_kind(record)}")
    return record


def parse_transcript(text: str) -> Transcript:
    """Parse a JSONL session transcript; malformed lines are skipped with a reason.

    Never raises, whatever the input: a transcript is read while it may still be written.
    """
    turns: list[Turn] = []
    compactions: list[tuple[int, str, datetime | None]] = []
    skipped: list[tuple[int, str]] = []
    completed_at: datetime | None = None
    secrets: Counter[str] = Counter()

    def clean(value: str, after: str = "") -> str:
        scrubbed = scrub_secrets(value, after=after)
        secrets.update(scrubbed.counts)
        return scrubbed.text

    if not isinstance(text, str):
        return Transcript((), (), None, ((0, f"expected text, got {type(text).__name__}"),))
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = _NEWLINE_RE.split(text)
    last_content = max((i for i, raw in enumerate(lines) if raw.strip()), default=-1)
    # A file that ends without a newline may have been cut in the middle of its last line.
    last_may_be_partial = not text.endswith(("\n", "\r"))

    for index, raw in enumerate(lines):
        if not raw.strip():
            continue
        number = index + 1
        try:
            record = _read_line(raw, is_last=last_may_be_partial and index == last_content)
            kind = record.get("type", MESSAGE)
            if not isinstance(kind, str):
                raise _SkipLine(f"'type' must be a string, not {_kind(kind)}")
            ts = parse_timestamp(record.get("ts"))
            if kind == MESSAGE:
                role = record.get("role")
                if not isinstance(role, str) or not role.strip():
                    raise _SkipLine(
                        "missing 'role'" if role is None else "'role' must be a non-empty string"
                    )
                # the turn before may have asked for a credential this one gives alone
                content = clean(_content_text(record.get("content")), after=turns[-1].content if turns else "")
                turn_id = _turn_id(record.get("turn_id"))
                turn_id = clean(turn_id) if turn_id is not None else None
                turns.append(Turn(number, clean(role), content, ts, turn_id))
            elif kind == COMPACTION:
                summary = record.get("summary")
                if not isinstance(summary, str) or not summary.strip():
                    raise _SkipLine("compaction without a non-empty 'summary' string")
                compactions.append((number, clean(summary), ts))
            elif kind == SESSION_COMPLETED:
                completed_at = ts if ts is not None else _last_turn_ts(turns)
            else:
                raise _SkipLine(f"unknown line type {kind[:40]!r}")
        except _SkipLine as skip:
            skipped.append((number, clean(str(skip))))
        except Exception as exc:  # never let one odd line lose the session
            skipped.append((number, clean(f"unreadable line ({type(exc).__name__}: {exc})")))

    return Transcript(
        turns=tuple(turns),
        compactions=tuple(compactions),
        completed_at=completed_at,
        skipped=tuple(skipped),
        secrets=dict(secrets),
    )


def read_transcript(path: Path) -> Transcript | str:
    """The parsed transcript at ``path`` (secrets scrubbed by the parse), or why it cannot be read.
    Every reader of transcripts reads them here, under the one size limit of the settings
    (``MEMORY_PIPELINE_MAX_FILE_BYTES``): a file too large to index is too large to consolidate."""
    read = read_text_file(path, get_settings().max_file_bytes, scrub=False)  # parsing scrubs
    if read.text is None:
        return read.reason or "unreadable"
    return parse_transcript(read.text)


def _last_turn_ts(turns: list[Turn]) -> datetime | None:
    for turn in reversed(turns):
        if turn.ts is not None:
            return turn.ts
    return None
