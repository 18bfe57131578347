"""Dreaming: promote a tenant's oldest unpromoted episodes into long-term Markdown.

What goes into the document is chosen by ``dream_lines``; this module writes and merges it.

The document ``_system/dreaming/YYYYMMDD-consolidated.md`` in the tenant's memory folder has four
sections (preferences, project facts, recurring patterns, key decisions); every line cites the
episode it came from as ``[session_id · path#Lstart-Lend]``. The file belongs to the pipeline: it
starts with a marker comment, a later run on the same day merges its lines into it without
repeating one, and a file without the marker (written by a person) is never overwritten.
Secrets are scrubbed from every line before it is written, and counted
(``DreamResult.secrets_redacted``) like every other stage that stores text.
The workspace sensor sees the new file (it matches ``memory/**/*.md``) and indexes it in L0.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

from memory_pipeline.llm.client import DREAMING_MAX_TOKENS, LLMClient, LLMError
from memory_pipeline.llm.output import poisoned, ungrounded
from memory_pipeline.recall.timeline import cited_statements
from memory_pipeline.tenancy import Tenant
from memory_pipeline.text.scrub import scrub_secrets
from memory_pipeline.text.summarize import shorten

MAX_EPISODES = 10
MARKER = "<!-- memory_pipeline:dreaming (generated; lines are merged by later runs, edits elsewhere) -->"
PREFERENCES = "Preferences"
PROJECT_FACTS = "Project facts"
PATTERNS = "Recurring patterns"
DECISIONS = "Key decisions"
SECTIONS = (PREFERENCES, PROJECT_FACTS, PATTERNS, DECISIONS)
LINE_CHARS = 260
EMPTY_SECTION = "_Nothing yet._"
_CITATION_RE = re.compile(r"\s*\[[^\[\]]*#L\d+(?:-L\d+)?\]\s*$")
_DATED_RE = re.compile(r"^(?P<who>[^,:\[\]]{1,60}), (?P<day>\d{4}-\d{2}-\d{2}|undated): ")
_FIGURES_RE = re.compile(r"\d+")
_REPLACED_RE = re.compile(r" _\(superseded [^()]*\)_(?=\s*\[[^\[\]]*\]\s*$)")


class HumanFileError(RuntimeError):
    """The dreaming file exists and was not written by the pipeline: it is left untouched."""


@dataclass(frozen=True)
class Line:
    section: str
    text: str
    citation: str
    secrets: int = field(default=0, compare=False)  # secrets scrubbed from ``text``

    def render(self) -> str:
        return f"- {self.text} {self.citation}"


def memory_dir(root: Path, tenant: Tenant) -> Path:
    if tenant.is_global:
        return root / tenant.agent_id / "memory"
    return root / tenant.agent_id / "users" / tenant.user_id / "memory"


def dreaming_path(root: Path, tenant: Tenant, day: datetime) -> Path:
    return _dreaming_folder(root, tenant) / f"{day:%Y%m%d}-consolidated.md"


def dreamed_files(root: Path, tenant: Tenant) -> list[Path]:
    """The tenant's dreamed documents on disk."""
    return sorted(_dreaming_folder(root, tenant).glob("*-consolidated.md"))


def _dreaming_folder(root: Path, tenant: Tenant) -> Path:
    return memory_dir(root, tenant) / "_system" / "dreaming"


def citation(episode: dict, start: int | None = None, end: int | None = None) -> str:
    if start is None:
        start, end = episode["start_line"], episode["end_line"]
    end = end or start
    lines = f"L{start}" if start == end else f"L{start}-L{end}"
    return f"[{episode['session_id']} · {episode['path']}#{lines}]"


def line_key(text: str) -> str:
    """What makes two lines the same: the text without its citation, case and spacing."""
    return " ".join(_CITATION_RE.sub("", _REPLACED_RE.sub("", text)).lstrip("- ").casefold().split())


def line_identity(section: str, text: str) -> str:
    """A line's identity when merging: its key; for a recurring pattern, its words without its
    figures, so "came up in 3 sessions" is restated as 4 by a later run, not repeated."""
    key = line_key(text)
    return _FIGURES_RE.sub("#", key) if section == PATTERNS else key


def _order(section: str, lines: list[str]) -> list[str]:
    """Dated lines grouped by person, in date order; the others after them, as they came."""
    dated = [(m["who"], m["day"], i) for i, line in enumerate(lines) if (m := _DATED_RE.match(line[2:]))]
    if section not in (PROJECT_FACTS, DECISIONS) or not dated:
        return lines
    first_seen: dict[str, int] = {}
    for who, _, i in dated:
        first_seen.setdefault(who, i)
    order = sorted(dated, key=lambda d: (first_seen[d[0]], d[1], d[2]))
    placed = {i for _, _, i in dated}
    return [lines[i] for _, _, i in order] + [line for i, line in enumerate(lines) if i not in placed]


def _line(section: str, text: str, cite: str, count_placeholders: bool = True) -> Line:
    """A line of one section: on one line, secrets scrubbed (and counted), shortened.

    Transcripts and episodes were scrubbed as they were read: the placeholders a line already
    holds are secrets it stands for, and are counted as the line's own (unless, as for an LLM's
    rewrite, its candidates were counted already).
    """
    carried = text.count("[REDACTED:") if count_placeholders else 0
    scrubbed = scrub_secrets(" ".join(text.split()))
    return Line(section, shorten(scrubbed.text, LINE_CHARS), cite, sum(scrubbed.counts.values()) + carried)


LLM_PROMPT = (
    "You consolidate an assistant's memory of one user. From the candidate lines below, write a "
    "Markdown document with exactly these sections: '## Preferences', '## Project facts', "
    "'## Recurring patterns', '## Key decisions'. Each bullet is one short sentence followed by the "
    "citation in square brackets copied exactly from the candidate it came from. Merge duplicates, "
    "drop trivia, invent nothing."
)


def llm_lines(client: LLMClient, candidates: Sequence[Line]) -> list[Line]:
    """Lines rewritten by the LLM; only bullets under a known section with a known citation count.

    The LLM sees the candidates already scrubbed; the secrets scrubbed from the candidates of a
    citation are counted on the first line the LLM writes with that citation. An answer with
    markup or text addressed to a model anywhere is refused whole (``llm.output.rejection``); a
    bullet that its cited candidates do not support is dropped.
    """
    prompt = "\n".join(f"{c.section}: {c.text} {c.citation}" for c in candidates)
    answer = client.chat(LLM_PROMPT, prompt, DREAMING_MAX_TOKENS)
    if (why := poisoned(answer)) is not None:
        client.record_failure(why)
        raise LLMError(f"answer rejected: {why}")
    allowed = {c.citation for c in candidates}
    cited: dict[str, str] = defaultdict(str)
    for c in candidates:
        cited[c.citation] += f" {c.text}"
    scrubbed: dict[str, int] = defaultdict(int)
    for c in candidates:
        scrubbed[c.citation] += c.secrets
    out, section = [], None
    for raw in answer.splitlines():
        text = raw.strip()
        if text.startswith("#"):
            title = text.lstrip("#").strip()
            section = next((s for s in SECTIONS if s.lower() == title.lower()), None)
            continue
        if section and text.startswith(("- ", "* ")):
            match = re.search(r"(\[[^\[\]]*#L\d+(?:-L\d+)?\])\s*$", text)
            if match and match.group(1) in allowed:
                body = _CITATION_RE.sub("", text[2:]).strip()
                if body and ungrounded(body, cited[match.group(1)]) is None:
                    line = _line(section, body, match.group(1), count_placeholders=False)
                    out.append(replace(line, secrets=line.secrets + scrubbed.pop(line.citation, 0)))
    if not out:
        raise LLMError("the answer had no bullet with a known section and citation")
    return out


def parse_document(text: str) -> dict[str, list[str]]:
    """The bullet lines of each section of an existing dreaming file."""
    sections: dict[str, list[str]] = {s: [] for s in SECTIONS}
    current = None
    for raw in text.splitlines():
        if raw.startswith("## "):
            current = raw[3:].strip()
            sections.setdefault(current, [])
        elif current and raw.startswith("- "):
            sections[current].append(raw.rstrip())
    return sections


def render_document(tenant: Tenant, day: datetime, sections: dict[str, list[str]], produced_by: str) -> str:
    cited = {m for lines in sections.values() for line in lines for m in re.findall(r"\[([^ \]]+) ·", line)}
    out = [
        MARKER,
        f"# Consolidated memory of {tenant.agent_id}/{tenant.user_id}, {day:%Y-%m-%d}",
        "",
        f"Promoted from {len(cited)} sessions by dreaming ({produced_by}). Each line cites its session "
        "transcript and lines.",
    ]
    for name in [*SECTIONS, *(s for s in sections if s not in SECTIONS)]:
        out += ["", f"## {name}", ""]
        out += sections.get(name) or [EMPTY_SECTION]
    return "\n".join(out) + "\n"


def mark_replaced(path: Path, replaced: dict[str, str]) -> bool:
    """Mark each line of a dreamed file that restates a replaced statement (``replaced``: its
    ``path#Lline`` -> the day it was replaced) with "_(superseded <day>)_" before its citation, and
    unmark a line whose statement stands again; returns whether the file changed. The document was
    written before the change was known: its line is kept, for the past, and read as earlier. A
    file without the marker line is a person's and is left alone."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return False
    if not text.startswith(MARKER):
        return False
    out = []
    for line in text.splitlines():
        if line.startswith("- "):
            line = _REPLACED_RE.sub("", line)
            day = next((replaced[ref] for ref in cited_statements(line) if ref in replaced), None)
            cite = _CITATION_RE.search(line)
            if day and cite:
                line = f"{line[:cite.start()]} _(superseded {day})_{line[cite.start():]}"
        out.append(line)
    marked = "\n".join(out) + "\n"
    if marked == text:
        return False
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(marked, encoding="utf-8")
    tmp.replace(path)
    return True


@dataclass
class DreamResult:
    path: Path
    lines_added: int
    lines_total: int
    by_section: dict[str, int]
    text: str
    secrets_redacted: int = 0  # secrets scrubbed from the lines this run added


def write_document(path: Path, tenant: Tenant, day: datetime, lines: Sequence[Line], produced_by: str) -> DreamResult:
    """Merge ``lines`` into the day's file (creating it); never touches a human-written file."""
    existing = ""
    if path.exists():
        existing = path.read_text(encoding="utf-8")
        if not existing.startswith(MARKER):
            raise HumanFileError(f"{path} exists and was not written by dreaming (no marker line); left untouched")
    sections = parse_document(existing)
    seen = {line_identity(name, line): (name, i) for name, lines_ in sections.items() for i, line in enumerate(lines_)}
    added = secrets = 0
    for line in lines:
        key = line_identity(line.section, line.text)
        if not key:
            continue
        if key in seen:
            name, i = seen[key]
            if name == PATTERNS and sections[name][i] != line.render():
                sections[name][i] = line.render()  # the pattern's count and dates, restated
            continue
        sections.setdefault(line.section, []).append(line.render())
        seen[key] = (line.section, len(sections[line.section]) - 1)
        added += 1
        secrets += line.secrets
    sections = {name: _order(name, items) for name, items in sections.items()}
    text = render_document(tenant, day, sections, produced_by)
    if text != existing:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)  # readers (the L0 sensor) never see a half-written file
    counts = {name: len(items) for name, items in sections.items()}
    return DreamResult(path, added, sum(counts.values()), counts, text, secrets)
