"""Dreaming: promote a tenant's oldest unpromoted episodes into long-term Markdown.

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

from memory_pipeline.consolidation.cues import DECISION, PREFERENCE, cues
from memory_pipeline.consolidation.llm import DREAMING_MAX_TOKENS, LLMClient, LLMError
from memory_pipeline.sources.transcripts import parse_transcript
from memory_pipeline.sources.workspace import read_text_file
from memory_pipeline.tenancy import Tenant
from memory_pipeline.text.scrub import scrub_secrets
from memory_pipeline.text.summarize import shorten

MAX_EPISODES = 10
THRESHOLD = 5
MARKER = "<!-- memory_pipeline:dreaming (generated; lines are merged by later runs, edits elsewhere) -->"
PREFERENCES = "Preferences"
PROJECT_FACTS = "Project facts"
PATTERNS = "Recurring patterns"
DECISIONS = "Key decisions"
SECTIONS = (PREFERENCES, PROJECT_FACTS, PATTERNS, DECISIONS)
LINE_CHARS = 260
EMPTY_SECTION = "_Nothing yet._"
_CITATION_RE = re.compile(r"\s*\[[^\[\]]*#L\d+(?:-L\d+)?\]\s*$")
_GRAPH_RULES = frozenset({"role", "residence", "employer", "preference"})


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
    return memory_dir(root, tenant) / "_system" / "dreaming" / f"{day:%Y%m%d}-consolidated.md"


def citation(episode: dict, start: int | None = None, end: int | None = None) -> str:
    if start is None:
        start, end = episode["start_line"], episode["end_line"]
    end = end or start
    lines = f"L{start}" if start == end else f"L{start}-L{end}"
    return f"[{episode['session_id']} · {episode['path']}#{lines}]"


def line_key(text: str) -> str:
    """What makes two lines the same: the text without its citation, case and spacing."""
    return " ".join(_CITATION_RE.sub("", text).lstrip("- ").casefold().split())


_PLACEHOLDER_RE = re.compile(r"\[(REDACTED:\w+)\]")


def _line(section: str, text: str, cite: str, count_placeholders: bool = True) -> Line:
    """A line of one section: on one line, secrets scrubbed (and counted), shortened.

    Transcripts and episodes were scrubbed as they were read: the placeholders a line already
    holds are secrets it stands for, and are counted as the line's own (unless, as for an LLM's
    rewrite, its candidates were counted already).
    """
    carried = text.count("[REDACTED:") if count_placeholders else 0
    scrubbed = scrub_secrets(" ".join(text.split()))
    return Line(section, shorten(scrubbed.text, LINE_CHARS), cite, sum(scrubbed.counts.values()) + carried)


def collect_lines(root: Path, episodes: Sequence[dict], relations: Sequence[dict]) -> tuple[list[Line], list[str]]:
    """Candidate lines of each section from episodes, their transcripts and their graph facts.

    Returns (lines, problems); a transcript that is gone still yields its episode's abstract.
    """
    lines: list[Line] = []
    problems: list[str] = []
    topic_episodes: dict[str, list[dict]] = defaultdict(list)
    for episode in episodes:
        lines.append(_line(PROJECT_FACTS, episode["l0_abstract"], citation(episode)))
        for topic in episode.get("key_topics") or []:
            topic_episodes[topic].append(episode)
        read = read_text_file(root / episode["path"], 32_000_000, scrub=False)  # parsing scrubs
        if read.text is None:
            problems.append(f"{episode['path']}: {read.reason}")
            continue
        transcript = parse_transcript(read.text)
        for turn in transcript.turns:
            # Sentence splitting drops bracketed asides; a secret's placeholder must stay in the
            # line (it says a credential was given, not which), so it is held out of brackets.
            held = _PLACEHOLDER_RE.sub("\ue000\\1\ue001", turn.content)
            for cue in cues(held, from_user=turn.role.lower() == "user"):
                cue = replace(cue, text=cue.text.replace("\ue000", "[").replace("\ue001", "]"))
                if cue.kind == PREFERENCE:
                    lines.append(_line(PREFERENCES, cue.text, citation(episode, turn.line, turn.line)))
                elif cue.kind == DECISION and turn.role.lower() == "user":
                    lines.append(_line(DECISIONS, cue.text, citation(episode, turn.line, turn.line)))
        for line_no, text, _ in transcript.compactions:
            for cue in cues(text, from_user=False):
                if cue.kind == DECISION:
                    lines.append(_line(DECISIONS, cue.text, citation(episode, line_no, line_no)))
    by_id = {e["id"]: e for e in episodes}
    for rel in relations:
        episode = by_id.get(rel["source_episode"])
        if episode is None or rel["rule"] not in _GRAPH_RULES:
            continue
        section = PREFERENCES if rel["predicate"] == "prefers" else PROJECT_FACTS
        since = ""
        if rel.get("valid_from") and rel.get("valid_to"):
            since = f" ({rel['valid_from']:%Y-%m-%d} to {rel['valid_to']:%Y-%m-%d})"
        elif rel.get("valid_from"):
            since = f" (since {rel['valid_from']:%Y-%m-%d})"
        text = f"{rel['subject']} — {rel['predicate'].replace('_', ' ')}: {rel['object']}{since}"
        lines.append(_line(section, text, citation(episode, rel["line"], rel["line"])))
    for topic, items in sorted(topic_episodes.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        if len(items) >= 2:
            first, last = items[0], items[-1]
            text = f"{topic} came up in {len(items)} sessions ({first['day']} to {last['day']})"
            lines.append(_line(PATTERNS, text, citation(last)))
    return lines, problems


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
    citation are counted on the first line the LLM writes with that citation.
    """
    prompt = "\n".join(f"{c.section}: {c.text} {c.citation}" for c in candidates)
    answer = client.chat(LLM_PROMPT, prompt, DREAMING_MAX_TOKENS)
    allowed = {c.citation for c in candidates}
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
                if body:
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
    seen = {line_key(line) for lines_ in sections.values() for line in lines_}
    added = secrets = 0
    for line in lines:
        key = line_key(line.text)
        if key and key not in seen:
            seen.add(key)
            sections.setdefault(line.section, []).append(line.render())
            added += 1
            secrets += line.secrets
    text = render_document(tenant, day, sections, produced_by)
    if text != existing:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)  # readers (the L0 sensor) never see a half-written file
    counts = {name: len(items) for name, items in sections.items()}
    return DreamResult(path, added, sum(counts.values()), counts, text, secrets)
