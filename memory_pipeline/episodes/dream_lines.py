"""What dreaming writes: lines that read as memory, each naming whom it is about.

From each promoted episode's transcript, read as statements (third person, with speaker and
time):
- Project facts: the most salient statements that are whole clauses about a person (a speaker,
  "we" or the person spoken to as the subject: "This pic's from last night" is no fact), at most
  ``FACTS_PER_EPISODE`` different ones per episode, as "Jon, 2023-01-20: Jon lost their
  job as a banker."; graph facts with validity (roles, residence, employer) beside them.
- Preferences and key decisions: the tenant's typed memories of those types from these sessions,
  and the statements the typed-memory rules would type so (the same text, merged into one line),
  plus decisions recorded in compaction summaries.
- Recurring patterns: a person and a thing they did, liked or planned, or a named entity, that
  came up in two sessions or more over the tenant's whole graph; a later run restates the count
  (``dreaming.write_document`` replaces a pattern line whose words are the same but its figures).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path

from memory_pipeline.episodes.dreaming import DECISIONS, PATTERNS, PREFERENCES, PROJECT_FACTS, Line, citation
from memory_pipeline.episodes.dreaming import _line as make_line
from memory_pipeline.sources.transcripts import read_transcript
from memory_pipeline.text.memory_types import DECISION, PREFERENCE, classify, cues
from memory_pipeline.text.salience import select
from memory_pipeline.text.statements import Statement, statements

FACTS_PER_EPISODE = 4
FACT_MIN_SALIENCE = 2.0
_GRAPH_RULES = frozenset({"role", "residence", "employer", "preference"})
_PATTERN_RULES = frozenset({"action", "preference", "role", "residence", "employer"})


def _named(text: str, who: str | None) -> str:
    """The text, opened by the person it is about when it does not name them."""
    if not who or re.search(rf"\b{re.escape(who)}\b", text):
        return text
    return f"{who}: {text}"


def _fact_text(s: Statement) -> str:
    who = s.subject or s.speaker
    day = f"{s.said_at:%Y-%m-%d}" if s.said_at else "undated"
    return f"{who}, {day}: {s.text}"


def kind_of(s: Statement) -> str | None:
    """"preference" or "decision" when the sentence classifier reads it so."""
    if s.features.question or s.salience < 0.2 or not s.features.substance:
        return None
    typed = classify(s.said)
    return typed[0] if typed is not None and typed[0] in (PREFERENCE, DECISION) else None


def statement_lines(episode: dict, said: Sequence[Statement]) -> list[Line]:
    """Facts, preferences and decisions of one episode's statements."""
    lines: list[Line] = []
    spoken = [s for s in said if s.speaker is not None]
    kinds = {s.index: kind_of(s) for s in spoken}
    for s in spoken:
        cite = citation(episode, s.line, s.line)
        if kinds[s.index] == PREFERENCE:
            lines.append(make_line(PREFERENCES, _named(s.text, s.subject), cite))
        elif kinds[s.index] == DECISION:
            lines.append(make_line(DECISIONS, _fact_text(s), cite))
    whole = [s for s in spoken if kinds[s.index] is None and s.features.clause and s.features.person_subject
             and not s.features.question and s.salience >= FACT_MIN_SALIENCE]
    for s in sorted(select(whole, lambda s: s.salience, lambda s: s.features.terms, k=FACTS_PER_EPISODE),
                    key=lambda s: s.index):
        lines.append(make_line(PROJECT_FACTS, _fact_text(s), citation(episode, s.line, s.line)))
    return lines


def memory_lines(episodes: Sequence[dict], memories: Iterable[dict]) -> list[Line]:
    """Preference and decision lines from typed memories extracted from these episodes' sessions."""
    by_path = {e["path"]: e for e in episodes}
    out = []
    for memory in memories:
        path, _, line = (memory.get("source_ref") or "").partition("#L")
        episode = by_path.get(path)
        if episode is None or memory["memory_type"] not in ("preference", "decision") or not line.isdigit():
            continue
        cite = citation(episode, int(line), int(line))
        if memory["memory_type"] == "preference":
            out.append(make_line(PREFERENCES, memory["content"], cite))
        else:
            when = memory.get("occurred_at") or memory.get("happens_at")
            text = memory["content"]
            out.append(make_line(DECISIONS, f"{when:%Y-%m-%d}: {text}" if when else text, cite))
    return out


def relation_lines(episodes: Sequence[dict], relations: Sequence[dict]) -> list[Line]:
    """Graph facts with their validity: "Ann — lives in: Porto (since 2026-11-11)"."""
    by_id = {e["id"]: e for e in episodes}
    out = []
    for rel in relations:
        episode = by_id.get(rel["source_episode"])
        if episode is None or rel["rule"] not in _GRAPH_RULES:
            continue
        section = PREFERENCES if rel["predicate"] in ("prefers", "likes") else PROJECT_FACTS
        since = ""
        if rel.get("valid_from") and rel.get("valid_to"):
            since = f" ({rel['valid_from']:%Y-%m-%d} to {rel['valid_to']:%Y-%m-%d})"
        elif rel.get("valid_from"):
            since = f" (since {rel['valid_from']:%Y-%m-%d})"
        text = f"{rel['subject']} — {rel['predicate'].replace('_', ' ')}: {rel['object']}{since}"
        out.append(make_line(section, text, citation(episode, rel["line"], rel["line"])))
    return out


def pattern_lines(
    episodes_by_id: dict[str, dict], relations: Sequence[dict], entities: Sequence[dict], people: set[str]
) -> list[Line]:
    """What came up in two sessions or more, over the tenant's whole graph, cited to its last session."""
    seen: dict[tuple[str, str], set[str]] = defaultdict(set)
    names: dict[tuple[str, str], tuple[str, str]] = {}
    for rel in relations:
        if rel["rule"] in _PATTERN_RULES and rel["source_episode"] in episodes_by_id:
            key = (rel["subject"].casefold(), rel["object"].casefold())
            seen[key].add(rel["source_episode"])
            names.setdefault(key, (rel["subject"], rel["object"]))
    topics: list[tuple[str, set[str]]] = [(f"{names[k][0]} — {names[k][1]}", ids) for k, ids in seen.items()]
    for entity in entities:
        if entity["name"] not in people:
            topics.append((entity["name"], {i for i in entity.get("episode_ids") or [] if i in episodes_by_id}))
    out = []
    for topic, ids in sorted(topics, key=lambda kv: (-len(kv[1]), kv[0])):
        if len(ids) < 2:
            continue
        ordered = sorted((episodes_by_id[i] for i in ids), key=lambda e: e["completed_at"])
        text = f"{topic}: came up in {len(ordered)} sessions ({ordered[0]['day']} to {ordered[-1]['day']})"
        out.append(make_line(PATTERNS, text, citation(ordered[-1])))
    return out


def collect_lines(
    root: Path, episodes: Sequence[dict], relations: Sequence[dict], *, user_name: str = "user",
    memories: Sequence[dict] = (), all_relations: Sequence[dict] = (), all_episodes: Sequence[dict] = (),
    entities: Sequence[dict] = (), nlp=None, superseded: Collection[str] = (),
) -> tuple[list[Line], list[str]]:
    """Candidate lines of each section; returns (lines, problems: transcripts that cannot be read).

    A turn a later statement replaced (``superseded``: its ``path#Lline``, as consolidation
    recorded it) gives no line: a moved plan is not a decision that holds."""
    lines: list[Line] = []
    problems: list[str] = []
    people: set[str] = set()
    for episode in episodes:
        transcript = read_transcript(root / episode["path"])
        if isinstance(transcript, str):
            problems.append(f"{episode['path']}: {transcript}")
            lines.append(make_line(PROJECT_FACTS, episode["l0_abstract"], citation(episode)))
            continue
        said = [
            s for s in statements(transcript.turns, user_name, nlp, path=episode["path"]) if s.ref not in superseded
        ]
        people.update(s.speaker for s in said if s.speaker)
        lines += statement_lines(episode, said)
        for line_no, text, _ in transcript.compactions:
            for cue in cues(text, from_user=False):
                if cue.kind == DECISION:
                    lines.append(make_line(DECISIONS, cue.text, citation(episode, line_no, line_no)))
    lines += memory_lines(episodes, memories)
    lines += relation_lines(episodes, relations)
    by_id = {e["id"]: e for e in [*all_episodes, *episodes]}
    lines += pattern_lines(by_id, all_relations or relations, entities, people)
    return lines, problems
