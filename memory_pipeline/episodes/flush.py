"""Flush: save what matters from a message list before an agent compacts its context.

``flush(messages, agent, user)`` reads the messages without a model, keeps the key facts,
preferences, decisions and action items, and appends them to the tenant's dated note
``memory/YYYY-MM-DD.md`` (created if missing). Secrets are scrubbed; a line already in the note is
not appended again, so flushing the same messages twice adds nothing. Small talk (greetings,
thanks, pleasantries) is not a key fact, however many names it holds.

``flush_session`` is the pipeline's stage: the turns of one live transcript that the flush sensor
found past a threshold (see ``live_flush``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory_pipeline.config import get_settings
from memory_pipeline.episodes.dreaming import line_key, memory_dir
from memory_pipeline.episodes.sessions import session_files
from memory_pipeline.recall.scope import ReadOnlyError, is_read_only
from memory_pipeline.sources.transcripts import read_transcript
from memory_pipeline.tenancy import Tenant
from memory_pipeline.text.memory_types import ACTION, DECISION, FACT, PREFERENCE, cues
from memory_pipeline.text.scrub import scrub_secrets
from memory_pipeline.text.summarize import shorten

HEADINGS = {FACT: "Key facts", PREFERENCE: "Preferences", DECISION: "Decisions", ACTION: "Action items"}
LINE_CHARS = 300
_SMALL_TALK_RE = re.compile(
    r"^\W*(?:hi|hello|hey|thanks|thank you|cheers|good (?:morning|afternoon|evening|night)|bye|goodbye|"
    r"see you|talk soon|lol|haha|no worries|no problem|you're welcome|sounds good|nice to (?:meet|see|hear))\b"
    r"|\bhave a (?:nice|good|great|lovely) (?:day|weekend|evening|one|trip|time)\b"
    r"|\bhow (?:are|was|is) (?:you|your|the weather)\b|\b(?:lovely|nice|great|terrible|awful) weather\b",
    re.I,
)


@dataclass
class FlushResult:
    path: Path
    added: dict[str, int] = field(default_factory=dict)
    skipped_duplicates: int = 0
    secrets_redacted: int = 0

    @property
    def total(self) -> int:
        return sum(self.added.values())


def _messages(messages: Sequence[Any]) -> list[tuple[str, str]]:
    """(role, text) pairs from dicts like {"role", "content"} or plain strings (taken as the user's)."""
    out = []
    for message in messages:
        if isinstance(message, str):
            out.append(("user", message))
        elif isinstance(message, dict):
            content = message.get("content")
            if isinstance(content, list):
                content = "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
            if isinstance(content, str) and content.strip():
                out.append((str(message.get("role") or "user"), content))
    return out


def extract_notes(messages: Sequence[Any]) -> tuple[dict[str, list[str]], int]:
    """The flushed lines by kind, in message order, and how many secrets were redacted."""
    notes: dict[str, list[str]] = {kind: [] for kind in HEADINGS}
    redacted = 0
    for role, text in _messages(messages):
        scrubbed = scrub_secrets(text)
        redacted += sum(scrubbed.counts.values())
        from_user = role.lower() == "user"
        for cue in cues(scrubbed.text, from_user=from_user):
            if cue.kind == FACT and (not from_user or _SMALL_TALK_RE.search(cue.text)):
                continue
            notes[cue.kind].append(shorten(cue.text, LINE_CHARS))
    return notes, redacted


def flush(
    messages: Sequence[Any],
    agent: str,
    user: str,
    root: str | Path | None = None,
    now: datetime | None = None,
) -> FlushResult:
    """Append the key facts, preferences, decisions and action items of ``messages`` to today's note.

    ReadOnlyError for a team member: its memory is its leader's, which only the leader writes."""
    tenant = Tenant(agent, user)  # refuses ids that could name a path outside the root
    if is_read_only(agent, get_settings()):
        raise ReadOnlyError()
    now = now or datetime.now(UTC)
    root = Path(root or get_settings().root).resolve()
    path = memory_dir(root, tenant) / f"{now:%Y-%m-%d}.md"
    notes, redacted = extract_notes(messages)
    existing = path.read_text(encoding="utf-8") if path.exists() else ""
    seen = {line_key(line) for line in existing.splitlines() if line.startswith("- ")}
    result = FlushResult(path, secrets_redacted=redacted)
    block: list[str] = []
    for kind, heading in HEADINGS.items():
        fresh = []
        for text in notes[kind]:
            key = line_key(text)
            if key in seen:
                result.skipped_duplicates += 1
                continue
            seen.add(key)
            fresh.append(f"- {text}")
        if fresh:
            block += ["", f"### {heading}", "", *fresh]
            result.added[kind] = len(fresh)
    if not block:
        return result
    header = "" if existing else f"# {now:%Y-%m-%d}\n"
    separator = "" if not existing or existing.endswith("\n") else "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    # Append, never rewrite: the note may be written by a person or another agent at the same time.
    with path.open("a", encoding="utf-8") as handle:
        handle.write(separator + header + f"\n## Flushed at {now:%H:%M} UTC\n" + "\n".join(block) + "\n")
    return result


def flush_session(
    root: str | Path, tenant: Tenant, path: str, start: int = 0, end: int | None = None, now: datetime | None = None
) -> FlushResult:
    """Flush turns ``start:end`` of the tenant's transcript ``path`` (relative to the root).

    ValueError for a path that is not one of the tenant's transcripts or cannot be read: the flush
    never reads outside the tenant's own sessions folder.
    """
    root = Path(root).resolve()
    if path not in {f.path for f in session_files(root, tenant)}:
        raise ValueError(f"{path}: not a transcript of {tenant.key}")
    transcript = read_transcript(root / path)
    if isinstance(transcript, str):
        raise ValueError(f"{path}: {transcript}")
    turns = transcript.turns[start:end]
    return flush([{"role": t.role, "content": t.content} for t in turns], tenant.agent_id, tenant.user_id, root, now)
