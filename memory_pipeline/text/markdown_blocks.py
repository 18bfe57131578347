"""Markdown parsed into blocks in one pass: front matter, ATX and setext headings, paragraphs,
list items, fenced code, tables, blockquotes and thematic breaks, each with its 0-based line range.

``text.chunking`` packs these blocks into chunks. The work is linear in the input.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_BLANK, _TEXT, HEADING, FENCE, _LIST, QUOTE, _TABLE, _BREAK = range(8)
_FRONT_MATTER = 8
SPLIT_BY_LINES = frozenset({_TABLE, _FRONT_MATTER})
_FRONT_MATTER_MAX_LINES = 500

_ATX_RE = re.compile(r" {0,3}(#{1,6})(?:[ \t]|$)")
_FRONT_MATTER_KEY_RE = re.compile(r"[A-Za-z_][\w.-]*[ \t]*[:=]")
_FENCE_RE = re.compile(r"[ \t]*(`{3,}|~{3,})(.*)$")
_LIST_RE = re.compile(r"[ \t]*(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)")
_BREAK_RE = re.compile(r" {0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})$")
_SETEXT_RE = re.compile(r" {0,3}(=+|-+)[ \t]*$")
_TABLE_DELIM_RE = re.compile(r"[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
QUOTED_FENCE_RE = re.compile(r"^[ \t]*(?:>[ \t]*)+(?:`{3}|~{3})", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Block:
    start: int  # 0-based line index, inclusive
    end: int  # inclusive
    kind: int
    level: int = 0  # heading level
    title: str = ""  # heading text


def _line_kind(line: str, max_heading: int) -> int:
    stripped = line.lstrip(" \t")
    if not stripped or not stripped.strip():
        return _BLANK
    first = stripped[0]
    indent = len(line) - len(stripped)
    if first in "`~":
        match = _FENCE_RE.match(line)
        # An info string with a backtick (```like this```) is inline code, not a fence.
        if match and not (first == "`" and "`" in match.group(2)):
            return FENCE
        return _TEXT
    if first == "#":
        if indent <= 3 and len(line) <= max_heading and _ATX_RE.match(line):
            return HEADING
        return _TEXT
    if first == ">":
        return QUOTE if indent <= 3 else _TEXT
    if first in "-*_" and indent <= 3 and _BREAK_RE.match(line):
        return _BREAK
    if (first in "-*+" or first.isdigit()) and _LIST_RE.match(line):
        return _LIST
    if first == "|":
        return _TABLE
    return _TEXT


def _atx_heading(line: str) -> tuple[int, str]:
    match = _ATX_RE.match(line)
    assert match is not None
    title = line[match.end() :].strip()
    # A closing run of #s is decoration when it stands alone: "# Title ##" but "# C#".
    bare = title.rstrip("#")
    if not bare or bare[-1] in " \t":
        title = bare.strip()
    return len(match.group(1)), title


def parse_blocks(lines: list[str], max_heading: int) -> list[Block]:
    """Markdown blocks in order; blank lines belong to no block."""
    kinds = [_line_kind(line, max_heading) for line in lines]
    n = len(lines)
    blocks: list[Block] = []
    i = _front_matter_end(lines)
    if i:
        blocks.append(Block(0, i - 1, _FRONT_MATTER))
    # For each fence character, the shortest fence length known to have no closer after the
    # line it was searched from: keeps unclosed fences from making the scan quadratic.
    unclosable: dict[str, int] = {}
    while i < n:
        kind = kinds[i]
        if kind == _BLANK:
            i += 1
            continue
        if kind == FENCE:
            close = _fence_close(lines, kinds, i, unclosable)
            if close is not None:
                blocks.append(Block(i, close, FENCE))
                i = close + 1
                continue
            # An unclosed fence is text: one stray ``` must not swallow the rest of the file.
            kind = kinds[i] = _TEXT
        if kind == HEADING:
            level, title = _atx_heading(lines[i])
            blocks.append(Block(i, i, HEADING, level, title))
            i += 1
        elif kind == _BREAK:
            blocks.append(Block(i, i, _BREAK))
            i += 1
        elif kind == QUOTE:
            j = i + 1
            while j < n and kinds[j] in (QUOTE, _TEXT):  # lazy continuation lines
                j += 1
            blocks.append(Block(i, j - 1, QUOTE))
            i = j
        elif kind == _LIST:
            j = i + 1
            while j < n and kinds[j] == _TEXT:
                j += 1
            blocks.append(Block(i, j - 1, _LIST))
            i = j
        elif kind == _TABLE or _is_table_header(lines, kinds, i):
            j = i + 1
            while j < n and kinds[j] in (_TABLE, _TEXT) and "|" in lines[j]:
                j += 1
            blocks.append(Block(i, j - 1, _TABLE))
            i = j
        else:
            i = _paragraph(lines, kinds, i, blocks, max_heading)
    return blocks


def _paragraph(
    lines: list[str], kinds: list[int], i: int, blocks: list[Block], max_heading: int
) -> int:
    """Append the paragraph (or setext heading) starting at line i; return the next line."""
    n = len(lines)
    j = i + 1
    size = len(lines[i])
    while j < n:
        size += 1 + len(lines[j])
        if lines[j].lstrip()[:1] in ("=", "-") and size <= max_heading:
            setext = _SETEXT_RE.match(lines[j])
            if setext:
                title = " ".join(line.strip() for line in lines[i:j])
                level = 1 if setext.group(1)[0] == "=" else 2
                blocks.append(Block(i, j, HEADING, level, title))
                return j + 1
        if kinds[j] != _TEXT or _is_table_header(lines, kinds, j):
            break
        j += 1
    blocks.append(Block(i, j - 1, _TEXT))
    return j


def _is_table_header(lines: list[str], kinds: list[int], i: int) -> bool:
    return (
        "|" in lines[i]
        and i + 1 < len(lines)
        and "-" in lines[i + 1]
        and _TABLE_DELIM_RE.match(lines[i + 1]) is not None
    )


def _front_matter_end(lines: list[str]) -> int:
    """Line index after a closed front matter block at the top of the file, else 0."""
    if not lines:
        return 0
    opener = lines[0].rstrip()
    # A leading "---" is also a thematic break: only YAML/TOML-looking content counts.
    if opener not in ("---", "+++") or len(lines) < 3 or not _FRONT_MATTER_KEY_RE.match(lines[1]):
        return 0
    closers = ("---", "...") if opener == "---" else ("+++",)
    for j in range(2, min(len(lines), _FRONT_MATTER_MAX_LINES)):
        if lines[j].rstrip() in closers:
            return j + 1
    return 0


def _fence_close(
    lines: list[str], kinds: list[int], i: int, unclosable: dict[str, int]
) -> int | None:
    opener = _FENCE_RE.match(lines[i])
    assert opener is not None
    marker = opener.group(1)
    char, length = marker[0], len(marker)
    if length >= unclosable.get(char, 1 << 30):
        return None
    for j in range(i + 1, len(lines)):
        if kinds[j] == FENCE:
            candidate = _FENCE_RE.match(lines[j])
            run = candidate.group(1) if candidate else ""
            if run[0] == char and len(run) >= length and not candidate.group(2).strip():
                return j
    unclosable[char] = length
    return None
