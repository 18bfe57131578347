"""Chunking: Markdown memory files and session transcripts into citable spans.

Every chunk carries the exact 1-based line range it came from, so recall can cite
``path#Lstart-Lend`` and ``memory_get`` can read those lines back. Lines are counted the way
Python's universal newlines count them (``\\n``, ``\\r\\n`` and ``\\r``; see ``split_lines``), which
is also what ``Path.read_text`` yields. ``str.splitlines`` differs (it also breaks on form feeds,
``\\x1c``-``\\x1e``, ``\\u2028``...), so code that reads lines back should use ``split_lines``.

Markdown is parsed into blocks in one pass (``text.markdown_blocks``), then blocks are packed into
chunks of about ``target_chars``. Fenced code is never split. An oversized paragraph, list item or
blockquote is split at sentence or word boundaries with ``overlap_chars`` of overlap; an oversized
table or front matter is split between rows, without overlap. The work is linear in the input.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from datetime import timezone
from itertools import accumulate

from memory_pipeline.text.markdown_blocks import (
    FENCE,
    HEADING,
    QUOTE,
    QUOTED_FENCE_RE,
    SPLIT_BY_LINES,
    Block,
    parse_blocks,
)
from memory_pipeline.text.turns import Transcript, Turn


@dataclass(frozen=True)
class ChunkSpan:
    """A piece of a source file: its exact line range, its text and where it sits."""

    start_line: int  # 1-based, inclusive
    end_line: int  # inclusive
    text: str
    heading_path: tuple[str, ...] = ()  # e.g. ("Projects", "Apollo")
    turn_ids: tuple[str, ...] = ()  # transcript windows only


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` as chunk line numbers count them (a leading BOM is dropped)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.split("\n")


# --- Splitting long text ---------------------------------------------------------------------

_SENTENCE_END_RE = re.compile(r"[.!?…][\"')\]»”’]*(?=\s)")
_WHITESPACE_RE = re.compile(r"\s")


def _split_text(
    text: str, first_budget: int, budget: int, overlap: int
) -> list[tuple[int, int]]:
    """Cut text into [start, end) pieces of at most the budget, trimmed of whitespace.

    Cuts fall after a sentence end when one lies in the second half of the window, else at the
    last whitespace, else at the budget. Each piece after the first starts about ``overlap``
    characters before the previous cut, at a sentence or word start.
    """
    n = len(text)
    pieces: list[tuple[int, int]] = []
    pos = _skip_space(text, 0, n)
    limit = max(1, first_budget)
    while pos < n:
        if n - pos <= limit:
            pieces.append((pos, _trim_end(text, pos, n)))
            break
        hard = pos + limit
        cut = _best_cut(text, pos + limit // 2, hard)
        pieces.append((pos, _trim_end(text, pos, cut)))
        nxt = _skip_space(text, _overlap_start(text, pos, cut, min(overlap, limit // 3)), n)
        pos = nxt if nxt > pos else _skip_space(text, cut, n)
        limit = max(1, budget)
    return pieces


def _best_cut(text: str, low: int, hard: int) -> int:
    # endpos hard + 1 lets the lookahead see the whitespace right after a sentence at the cut.
    sentence_end = None
    for match in _SENTENCE_END_RE.finditer(text, low, hard + 1):
        if match.end() <= hard:
            sentence_end = match.end()
    if sentence_end is not None:
        return sentence_end
    space = max(text.rfind(" ", low, hard + 1), text.rfind("\n", low, hard + 1))
    if space > low:
        return space
    return hard


def _overlap_start(text: str, pos: int, cut: int, overlap: int) -> int:
    if overlap <= 0:
        return cut
    start = max(cut - overlap, pos + 1)
    sentence = _SENTENCE_END_RE.search(text, start, cut)
    if sentence is not None:
        return sentence.end()
    if not text[start - 1].isspace():
        space = _WHITESPACE_RE.search(text, start, cut)
        return space.start() if space else cut
    return start


def _skip_space(text: str, pos: int, end: int) -> int:
    while pos < end and text[pos].isspace():
        pos += 1
    return pos


def _trim_end(text: str, start: int, end: int) -> int:
    while end > start and text[end - 1].isspace():
        end -= 1
    return end


# --- Packing blocks into chunks --------------------------------------------------------------


class _Packer:
    """Accumulates blocks into chunks; holds the line table and the heading stack."""

    def __init__(self, lines: list[str], target: int, maximum: int, overlap: int) -> None:
        self.lines = lines
        self.target, self.maximum, self.overlap = target, maximum, overlap
        # offsets[i]: where line i starts in "\n".join(lines); offsets[-1] is the length + 1.
        self.offsets = list(accumulate((len(line) + 1 for line in lines), initial=0))
        self.chunks: list[ChunkSpan] = []
        self.headings: list[tuple[int, str]] = []
        self.start: int | None = None  # first line of the open chunk
        self.end = 0
        self.path: tuple[str, ...] = ()
        self.has_content = False

    def size(self, first: int, last: int) -> int:
        return self.offsets[last + 1] - self.offsets[first] - 1

    def flush(self) -> None:
        if self.start is not None:
            text = "\n".join(self.lines[self.start : self.end + 1])
            self.chunks.append(ChunkSpan(self.start + 1, self.end + 1, text, self.path))
        self.start, self.has_content = None, False

    def add_heading(self, block: Block) -> None:
        if self.has_content or (
            self.start is not None and self.size(self.start, block.end) > self.maximum
        ):
            self.flush()
        while self.headings and self.headings[-1][0] >= block.level:
            self.headings.pop()
        self.headings.append((block.level, block.title))
        if self.start is None:
            self.start = block.start
        self.end = block.end
        # Consecutive headings share a chunk, whose path is that of the content under them.
        self.path = tuple(title for _, title in self.headings)

    def add(self, block: Block) -> None:
        if self.start is not None:
            combined = self.size(self.start, block.end)
            if self.has_content:
                if combined <= self.target:
                    self.end = block.end
                    return
                self.flush()
            elif combined <= self.maximum or block.kind == FENCE:
                # A heading stays with what follows it, even a fence longer than the maximum.
                self.end, self.has_content = block.end, True
                return
        if self.start is None and (
            block.kind == FENCE or self.size(block.start, block.end) <= self.maximum
        ):
            self.start, self.end, self.has_content = block.start, block.end, True
            self.path = tuple(title for _, title in self.headings)
            return
        self.split(block)

    def split(self, block: Block) -> None:
        """Emit an oversized block as pieces; the first joins any open headings-only chunk."""
        prefix_start = self.start
        first_budget = self.maximum
        if prefix_start is not None:
            # The first piece carries the headings and the block's indentation.
            opening = self.lines[block.start]
            first_budget = (
                self.maximum
                - (self.offsets[block.start] - self.offsets[prefix_start])
                - (len(opening) - len(opening.lstrip()))
            )
            if first_budget < self.maximum // 4 or first_budget < 1:
                self.flush()
                prefix_start, first_budget = None, self.maximum
        path = self.path if prefix_start is not None else tuple(t for _, t in self.headings)
        base = self.offsets[block.start]
        block_text = "\n".join(self.lines[block.start : block.end + 1])
        if block.kind in SPLIT_BY_LINES:
            pieces = self._line_groups(block, first_budget)
        else:
            pieces = _split_text(block_text, first_budget, self.maximum, self.overlap)
        for index, (lo, hi) in enumerate(pieces):
            if hi <= lo:
                continue
            first_line = self._line_at(base + lo)
            text = block_text[lo:hi]
            if index == 0 and prefix_start is not None:
                head = "\n".join(self.lines[prefix_start : block.start])
                text = head + "\n" + block_text[:hi]
                first_line = prefix_start
            self.chunks.append(
                ChunkSpan(first_line + 1, self._line_at(base + hi - 1) + 1, text, path)
            )
            path = tuple(t for _, t in self.headings)
        self.start, self.has_content = None, False

    def _line_groups(self, block: Block, first_budget: int) -> list[tuple[int, int]]:
        """[start, end) offsets, relative to the block, of groups of whole lines."""
        base = self.offsets[block.start]
        groups: list[tuple[int, int]] = []
        limit = first_budget
        line = block.start
        while line <= block.end:
            last = line
            while last < block.end and self.size(line, last + 1) <= limit:
                last += 1
            following = last + 1
            # Front matter may hold blank lines; a chunk never starts or ends on one.
            while line < last and not self.lines[line].strip():
                line += 1
            while last > line and not self.lines[last].strip():
                last -= 1
            lo = self.offsets[line] - base
            if not self.lines[line].strip():
                pass
            elif self.size(line, last) <= limit:
                groups.append((lo, self.offsets[last + 1] - 1 - base))
            else:  # one line longer than the budget: cut it like a paragraph
                text = self.lines[line]
                groups.extend(
                    (lo + a, lo + b)
                    for a, b in _split_text(text, limit, self.maximum, self.overlap)
                )
            line = following
            limit = self.maximum
        return groups

    def _line_at(self, offset: int) -> int:
        return bisect_right(self.offsets, offset) - 1


def chunk_markdown(
    text: str, *, target_chars: int = 1000, max_chars: int = 1600, overlap_chars: int = 200
) -> list[ChunkSpan]:
    """Split Markdown into chunks of whole blocks with exact line ranges and heading paths.

    Blocks are packed up to ``target_chars``; a heading opens a new chunk and stays with the
    content after it. Only a block longer than ``max_chars`` is split (never fenced code), and
    only such split pieces overlap. Blank or empty input gives no chunks.
    """
    if max_chars < 1:
        raise ValueError(f"max_chars must be at least 1, got {max_chars}")
    if overlap_chars < 0:
        raise ValueError(f"overlap_chars must not be negative, got {overlap_chars}")
    target_chars = max(1, min(target_chars, max_chars))
    if not text or text.isspace():
        return []
    lines = split_lines(text)
    packer = _Packer(lines, target_chars, max_chars, overlap_chars)
    for block in parse_blocks(lines, max_heading=max_chars):
        if block.kind == HEADING:
            packer.add_heading(block)
        elif block.kind == QUOTE and QUOTED_FENCE_RE.search(
            "\n".join(lines[block.start : block.end + 1])
        ):
            # A quote holding fenced code is as unsplittable as the code.
            packer.add(Block(block.start, block.end, FENCE))
        else:
            packer.add(block)
    packer.flush()
    return packer.chunks


# --- Transcripts -----------------------------------------------------------------------------

SUMMARY_PREFIX = "Summary: "


def format_turn(turn: Turn) -> str:
    """One turn as a line of text: ``Alice (2026-11-03 09:14): content`` (UTC, to the minute)."""
    return _turn_speaker(turn) + turn.content.strip()


def _turn_speaker(turn: Turn) -> str:
    """What opens a formatted turn: ``Alice (2026-11-03 09:14): ``."""
    role = turn.role.strip()
    if turn.ts is None:
        return f"{role}: "
    ts = turn.ts if turn.ts.tzinfo is not None else turn.ts.replace(tzinfo=timezone.utc)
    return f"{role} ({ts.astimezone(timezone.utc):%Y-%m-%d %H:%M}): "


def chunk_transcript(
    transcript: Transcript,
    *,
    window_turns: int = 3,
    stride: int = 2,
    max_chars: int = 1600,
    overlap_chars: int = 200,
) -> list[ChunkSpan]:
    """Overlapping windows of consecutive turns, plus one chunk per compaction summary.

    Windows of ``window_turns`` turns advance by ``stride``; the last window ends on the last
    turn. A window longer than ``max_chars`` is cut into smaller windows of whole turns, and a
    single turn longer than that is split like an oversized Markdown paragraph (at sentence or
    word boundaries, ``overlap_chars`` of overlap), every piece opening with the turn's speaker
    and time and citing the turn's line and id. Nothing is dropped. Chunks come in line order.
    """
    if window_turns < 1 or stride < 1 or max_chars < 1:
        raise ValueError(
            "window_turns, stride and max_chars must be at least 1, got "
            f"{window_turns}, {stride}, {max_chars}"
        )
    if overlap_chars < 0:
        raise ValueError(f"overlap_chars must not be negative, got {overlap_chars}")
    turns = transcript.turns
    texts = [format_turn(turn) for turn in turns]
    chunks: list[ChunkSpan] = []
    seen: set[tuple[int, int]] = set()
    for start in _window_starts(len(turns), window_turns, stride):
        stop = min(start + window_turns, len(turns))
        for first, last in _fit_turns(texts, start, stop, max_chars):
            if (first, last) in seen:
                continue
            seen.add((first, last))
            if len(texts[first]) > max_chars:  # _fit_turns gives such a turn a run of its own
                chunks.extend(_long_turn_pieces(turns[first], max_chars, overlap_chars))
                continue
            window = turns[first:last]
            chunks.append(
                ChunkSpan(
                    start_line=window[0].line,
                    end_line=window[-1].line,
                    text="\n".join(texts[first:last]),
                    turn_ids=tuple(t.turn_id for t in window if t.turn_id is not None),
                )
            )
    budget = max(1, max_chars - len(SUMMARY_PREFIX))
    for line, summary, _ts in transcript.compactions:
        for lo, hi in _split_text(summary, budget, budget, overlap=min(200, budget // 4)):
            chunks.append(ChunkSpan(line, line, SUMMARY_PREFIX + summary[lo:hi]))
    chunks.sort(key=lambda chunk: (chunk.start_line, chunk.end_line))
    return chunks


def _long_turn_pieces(turn: Turn, max_chars: int, overlap_chars: int) -> list[ChunkSpan]:
    """A turn longer than ``max_chars`` as overlapping pieces, each opening with its speaker."""
    speaker = _turn_speaker(turn)
    if len(speaker) > max_chars // 2:  # a role that long leaves no room: the piece says less
        speaker = speaker[: max_chars // 2]
    content = turn.content.strip()
    budget = max_chars - len(speaker)
    ids = (turn.turn_id,) if turn.turn_id is not None else ()
    if not content:
        return [ChunkSpan(turn.line, turn.line, speaker.rstrip(), turn_ids=ids)]
    return [
        ChunkSpan(turn.line, turn.line, speaker + content[lo:hi], turn_ids=ids)
        for lo, hi in _split_text(content, budget, budget, overlap_chars)
        if hi > lo
    ]


def _window_starts(count: int, window: int, stride: int) -> list[int]:
    if count == 0:
        return []
    if count <= window:
        return [0]
    starts = list(range(0, count - window + 1, stride))
    if starts[-1] + window < count:
        starts.append(count - window)
    return starts


def _fit_turns(texts: list[str], start: int, stop: int, max_chars: int) -> list[tuple[int, int]]:
    """Greedy runs [first, last) of whole turns whose joined text fits in max_chars."""
    runs = []
    first = start
    while first < stop:
        last = first + 1
        size = len(texts[first])
        while last < stop and size + 1 + len(texts[last]) <= max_chars:
            size += 1 + len(texts[last])
            last += 1
        runs.append((first, last))
        first = last
    return runs
