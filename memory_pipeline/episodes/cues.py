"""Which sentences state a preference, a decision, an action item or a durable fact.

Plain patterns, no model: they run on every sentence of a session or a flushed message list in
microseconds. Questions never count; preferences count only in the user's own words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory_pipeline.text.summarize import split_sentences

PREFERENCE = "preference"
DECISION = "decision"
ACTION = "action"
FACT = "fact"

_PREFERENCE_RE = re.compile(
    r"\b(?:i|we)\s+(?:really\s+|much\s+|strongly\s+)?(?:prefer|like|love|hate|dislike|enjoy|can't stand)\b"
    r"|\bi(?:'d| would) (?:rather|prefer|like)\b|\b(?:please )?(?:don't|do not|never|always) (?:schedule|call|email|send|use|contact|book)\b"
    r"|\b(?:email|text|chat) only\b|\bno (?:calls|meetings|emails)\b|\bkeep it (?:short|brief)\b|\bnothing after \d"
    r"|\bmy favou?rite\b|\bi(?:'m| am) (?:allergic|vegetarian|vegan)\b|\bremember (?:that )?i\b",
    re.I,
)
_DECISION_RE = re.compile(
    r"\b(?:decided|decide to|we'll go with|going with|agreed|approved|chose|chosen|settled on|we'll do|"
    r"we will do|it is then|(?:switch|switched|moving|move|moved|pushed|push) (?:\w+ ){0,5}to|cancel(?:led|ing)?|"
    r"narrow(?:ed)? (?:\w+ ){0,3}to|replac(?:e|ed|ing) (?:\w+ ){0,4}with|mark it|final answer)\b"
    r"|^\w+ it is\b",
    re.I,
)
_ACTION_RE = re.compile(
    r"\b(?:todo|to-do|action item|need to|needs to|have to|has to|i'll|i will|we'll|we will|will send|"
    r"remind me|follow up|open items?|deadline|due (?:on|by)?|by (?:mon|tue|wed|thu|fri|sat|sun)\w*|"
    r"by \d{1,2}(?:st|nd|rd|th)?\b|by (?:next|end of|tomorrow|tonight))\b",
    re.I,
)
_QUESTION_RE = re.compile(r"\?\s*$")
_NAMED_RE = re.compile(r"(?<=\s)[A-Z][a-z]+|\d")


@dataclass(frozen=True)
class Cue:
    kind: str
    text: str


def classify(sentence: str, from_user: bool) -> str | None:
    """The kind of one sentence, or None when it is none of them."""
    text = sentence.strip()
    if len(text.split()) < 3 or _QUESTION_RE.search(text):
        return None
    if from_user and _PREFERENCE_RE.search(text):
        return PREFERENCE
    if _DECISION_RE.search(text):
        return DECISION
    if _ACTION_RE.search(text):
        return ACTION
    if from_user and len(text.split()) >= 5 and _NAMED_RE.search(text):
        return FACT
    return None


def cues(text: str, from_user: bool) -> list[Cue]:
    out = []
    for sentence in split_sentences(text):
        kind = classify(sentence, from_user)
        if kind:
            out.append(Cue(kind, sentence.strip()))
    return out
