"""``grep(pattern)``: every line of a tenant's transcripts and notes that a regular expression matches.

The files are those recall reads for the (agent, user): its own notes and sessions, its agent-wide
memory, its team leader's. A transcript is matched turn by turn on ``role: content`` (as a person
reads it, not its JSON), a note line by line; each match comes back with its citation
(``path#Lline``), its time and the line, scrubbed of secrets as everything recall shows.

A regular expression can take exponential time on a short line (``(a|aa)+$``), so matching is
bounded: the pattern's length, the number of matches, the bytes read, and the time spent matching
(``regex``'s timeout, counted in the matching thread's CPU seconds, over the whole search). A
pattern that does not compile or runs out of time is refused with a ``GrepError`` naming the limit.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from memory_pipeline.config import Settings, get_settings
from memory_pipeline.recall.get import GetError
from memory_pipeline.recall.scope import recall_scopes

MAX_PATTERN_CHARS = 300
TIME_LIMIT_S = 1.0
"""CPU seconds of matching one search may spend, over all files."""
MAX_MATCHES = 200
MAX_BYTES = 64_000_000
"""Bytes read in one search; past them it stops and says so (``truncated``)."""
LINE_CHARS = 400

if TYPE_CHECKING:
    import regex


class GrepError(GetError):
    """The pattern is refused: it does not compile, is too long, or ran out of time."""


@dataclass(frozen=True)
class Match:
    citation: str
    kind: str  # turn | note_line
    text: str
    when: str | None

    def to_dict(self) -> dict:
        return {"citation": self.citation, "kind": self.kind, "text": self.text, "when": self.when}


@dataclass
class GrepResult:
    pattern: str
    matches: list[Match] = field(default_factory=list)
    files_searched: int = 0
    truncated: bool = False  # stopped at the match or byte limit

    def to_dict(self) -> dict:
        return {"pattern": self.pattern, "matches": [m.to_dict() for m in self.matches],
                "files_searched": self.files_searched, "truncated": self.truncated}


def compile_pattern(pattern: str, ignore_case: bool = False) -> regex.Pattern:
    import regex  # the one matcher with a time limit; imported when a search runs

    if not pattern:
        raise GrepError("no pattern given: pass a regular expression, e.g. 'Porto|Lisbon'")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise GrepError(f"pattern is {len(pattern)} characters, over the {MAX_PATTERN_CHARS}-character limit")
    try:
        return regex.compile(pattern, regex.IGNORECASE if ignore_case else 0)
    except (regex.error, ValueError, OverflowError) as exc:
        raise GrepError(f"bad regular expression {pattern!r}: {exc}") from None


def grep(
    pattern: str,
    *,
    agent: str,
    user: str | None = None,
    ignore_case: bool = False,
    limit: int = 50,
    time_limit_s: float = TIME_LIMIT_S,
    settings: Settings | None = None,
    root: str | Path | None = None,
) -> GrepResult:
    """Lines of the reader's transcripts and notes matching ``pattern``, by file path and line order."""
    from memory_pipeline.sources.workspace import KIND_MEMORY, KIND_SESSIONS, scan_workspace

    compiled = compile_pattern(pattern, ignore_case)
    if not 1 <= limit <= MAX_MATCHES:
        raise GrepError(f"limit must be 1 to {MAX_MATCHES}, got {limit}")
    settings = settings or get_settings()
    root_path = Path(root or settings.root)
    tenants = [s.tenant for s in recall_scopes(agent, user, settings)]
    scan = scan_workspace(root_path, only=tenants)
    files = sorted((f for t in tenants for f in scan.files.get(t, []) if f.kind in (KIND_MEMORY, KIND_SESSIONS)),
                   key=lambda f: f.path)
    result = GrepResult(pattern)
    budget = _Budget(time_limit_s, pattern)
    read = 0
    for file in files:
        if read + file.size > MAX_BYTES or len(result.matches) >= limit:
            result.truncated = True
            break
        read += file.size
        lines = _lines(root_path, file.path, file.kind == KIND_SESSIONS, settings.max_file_bytes)
        result.files_searched += 1
        for number, kind, text, when in lines:
            if budget.search(compiled, text):
                result.matches.append(Match(f"{file.path}#L{number}", kind, _shorten(text), when))
                if len(result.matches) >= limit:
                    break
    result.truncated = result.truncated or len(result.matches) >= limit
    return result


@dataclass
class _Budget:
    """The matching time left, shared by every line of one search."""

    seconds: float
    pattern: str

    def search(self, compiled: regex.Pattern, text: str) -> bool:
        if self.seconds <= 0:
            raise self._refused()
        started = time.thread_time()
        try:
            return compiled.search(text, timeout=self.seconds) is not None
        except TimeoutError:
            raise self._refused() from None
        finally:
            self.seconds -= time.thread_time() - started

    def _refused(self) -> GrepError:
        return GrepError(f"pattern {self.pattern!r} ran past the time limit of matching: simplify it (nested "
                         "repetition such as '(a+)+' takes exponential time) or search fewer words")


def _lines(root: Path, rel: str, transcript: bool, max_bytes: int) -> list[tuple[int, str, str, str | None]]:
    """(line, kind, text, when) of a file as a person reads it, scrubbed; nothing for a file that
    cannot be read (it is not indexed either)."""
    from memory_pipeline.recall.timeline import short_when
    from memory_pipeline.sources.transcripts import parse_transcript
    from memory_pipeline.sources.workspace import file_date, read_text_file
    from memory_pipeline.text.chunking import split_lines

    read = read_text_file(root / rel, max_bytes, scrub=not transcript)
    if read.text is None:
        return []
    if transcript:
        parsed = parse_transcript(read.text)
        out = [(t.line, "turn", f"{t.role}: {t.content}", short_when(t.ts)) for t in parsed.turns]
        out += [(line, "turn", f"compaction: {summary}", short_when(ts)) for line, summary, ts in parsed.compactions]
        return sorted(out)
    day = short_when(file_date(rel))
    return [(n, "note_line", line, day) for n, line in enumerate(split_lines(read.text), 1) if line.strip()]


def _shorten(text: str) -> str:
    return text if len(text) <= LINE_CHARS else text[: LINE_CHARS - 3] + "..."
