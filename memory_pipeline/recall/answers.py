"""What a question asks for (a date, a number, a person, a place, an attribute) and whether a
candidate states it: read by the current-state ordering (``timeline.current_first``) and by
``number_first`` below, which put a candidate that states the asked value above one that does not."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from memory_pipeline.recall.index.bm25 import query_words

if TYPE_CHECKING:
    from memory_pipeline.recall.query import QueryInfo

_ASK_RES = (
    ("date", re.compile(r"^\s*(?:when\b|what (?:date|day|time|year|month)\b|which (?:day|date|month|year)s?\b|"
                        r"on what day\b|at what time\b)|\bwhat is the (?:\w+ ){0,2}(?:date|deadline|day)\b", re.IGNORECASE)),
    ("number", re.compile(r"\bhow (?:much|many|big|large|long|often|fast)\b|\bwhat (?:is|are) the (?:\w+ ){0,2}"
                          r"(?:number|price|cost|rate|limit|size|quota|version|budget|amount|count|total|sla)\b|"
                          r"\bwhich version\b", re.IGNORECASE)),
    ("person", re.compile(r"^\s*(?:who|whom|whose)\b", re.IGNORECASE)),
    ("place", re.compile(r"^\s*where\b|\bwhich (?:city|country|town|place|office|room|address|region|state)\b",
                         re.IGNORECASE)),
    # One attribute of one subject, as it is now, whose value may be any words ("team lead",
    # "plant-based", "the 7:12 train"): "Which editor does Sam use?" (the noun asked about, not a
    # plural: "What pets does ..." asks for a list), "What is Pedro's job title?", "How does Oliver
    # get to work?"; not "What is ...", "What does ...", "What kind of ...", "How does X feel".
    ("attribute", re.compile(
        r"^\s*(?:which|what)\s+(?!(?:is|are|was|were|do|does|did|kind|type|sort|way)\b)(?:[\w-]+\s+){0,2}[\w-]*[^\Ws]\s+"
        r"(?:does|do|is|are|should|will)\b"
        r"|^\s*what\s+(?:is|are)\s+(?:[A-Z][\w-]*['’]s|my|our|your)\s+(?:[\w-]+\s+){0,2}[\w-]+\s*\?\s*$"
        r"|^\s*how\s+(?:does|do)\s+(?:[A-Z][\w-]*|I|we|you|the user)\s+(?!feel|think)\w+", re.IGNORECASE)),
)
_PERFECT_RE = re.compile(r"\b(?:has|have)\s+(?:\w+\s+){0,3}?\w+(?:ed|en|wn|ne|ght|ung)\b", re.IGNORECASE)
"""A question in the present perfect ("Where has Melanie camped?") asks what has happened so far."""
_HOLDS_RES = {
    "date": re.compile(
        r"\b(?:\d{1,2}:\d{2}|(?:19|20)\d\d-\d\d-\d\d|\d{1,2}(?:st|nd|rd|th)\b|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|"
        r"oct|nov|dec)[a-z]*\.?\s+\d{1,2}\b|\d{1,2}\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*|"
        r"(?:mon|tues|wednes|thurs|fri|satur|sun)days?|tomorrow|tonight|next (?:week|month|year))\b",
        re.IGNORECASE,
    ),
    "number": re.compile(r"\d|\b(?:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|"
                         r"fifty|hundreds?|thousands?|dozens?|couple|once|twice)\b", re.IGNORECASE),
}
"""What a statement holding a date (or time) or a number (in digits or words, but not "one", as often
"the one I liked") has in it, by the kind ``_ASK_RES`` names."""
_PROPER_RE = re.compile(r"(?<![.!?:]\s)(?<!^)(?<![.!?:])\b[A-Z][\w&.-]*[A-Za-z0-9]")
_POSSESSOR_RE = re.compile(r"\b([A-Z][a-z]+)['’]s\b")
_KIN_RE = re.compile(
    r"\b(?:my|our|his|her|their)\s+(wife|husband|partner|sister|brother|mother|father|mum|mom|dad|son|daughter|"
    r"parents|in-laws|friend|neighbou?r|colleague|boss|cousin|aunt|uncle|grandmother|grandfather)\b",
    re.IGNORECASE,
)


def asked_kind(question: str) -> str | None:
    """The kind of value a question asks for: date, number, person, place or an attribute (any
    words), from its opening words; None for a question that asks for none of them."""
    if _PERFECT_RE.search(question or ""):
        return None
    for kind, pattern in _ASK_RES:
        if pattern.search(question or ""):
            return kind
    return None


def holds_kind(text: str, kind: str) -> bool:
    """Whether a statement holds a value of ``kind``: a date or time, a number, a proper name (a
    capitalized word that does not open a sentence) for a person or place; any statement may hold
    an attribute."""
    if kind == "attribute":
        return True
    if kind in _HOLDS_RES:
        return bool(_HOLDS_RES[kind].search(text))
    names = [m.group() for m in _PROPER_RE.finditer(text) if m.group() not in ("I", "I'm", "I've", "I'll", "I'd")]
    return bool(names)


def other_subject(text: str, question: str) -> bool:
    """Whether a statement is about someone the question does not name: another person's
    possession ("Nora's manager") or a relative or colleague ("my wife", "her brother")."""
    asked = question.casefold()
    if any(m.group(1).casefold() not in asked for m in _POSSESSOR_RE.finditer(text)):
        return True
    return any(m.group(1).casefold() not in asked for m in _KIN_RE.finditer(text))


STATED_WINDOW = 6
"""``number_first`` looks this far down the ranking for a candidate that states a number."""
STATED_RELEVANCE = 0.6
"""... and takes one only if its relevance is at least this share of the best there (0.5 to 0.7
moved the same questions on both dev sets, bench/README.md)."""


def states_number(candidate, role: str | None) -> bool:
    """Whether a candidate states a number the question may ask for: a chat turn only when it is
    said by the role the question asks about (for "How many plants did I plant", the assistant's
    "leave 12-18 inches between them" is advice, not the answer)."""
    rows, i = candidate.rows, candidate.row
    if role and rows.source[i] == "sessions":
        speakers = rows.speakers(i)
        if speakers and not any(s.lower() == role for s in speakers):
            return False
    return holds_kind(rows.content(i), "number")


def number_first(candidates: list, info: QueryInfo) -> list:
    """For a question asking a number, a first candidate that states none (the user's own question
    about the same plants, the assistant's advice) gives its place to the best-ranked of the next
    candidates that states one, if that one is nearly as relevant (``STATED_RELEVANCE``); the
    candidates between move one place down, and every score stays in rank order.

    An episode keeps its place (it opens with its day, so its digits say nothing) and never takes
    another's."""
    if info.asks_kind != "number" or len(candidates) < 2:
        return candidates
    lead = candidates[0]
    if lead.rows.source[lead.row] == "episodes" or states_number(lead, info.asks_role):
        return candidates
    window = candidates[:STATED_WINDOW]
    best = max(c.relevance for c in window)
    for n, cand in enumerate(window[1:], 1):
        if (cand.rows.source[cand.row] != "episodes" and cand.relevance >= STATED_RELEVANCE * best
                and states_number(cand, info.asks_role)):
            return to_front(candidates, n)
    return candidates


def to_front(candidates: list, at: int) -> list:
    """``candidates`` with the one at ``at`` first and those before it one place down; each takes
    the score of the place it takes (``take_places``), so that scores stay in rank order."""
    window = candidates[: at + 1]
    take_places(window, list(range(at + 1)), [candidates[at], *window[:at]])
    return window + candidates[at + 1:]


def take_places(window: list, places: list[int], ordered: list) -> None:
    """Put ``ordered`` at ``places`` of ``window`` (in place): each takes the place, and the score,
    of the one it displaces, so that scores stay in rank order."""
    slots = [window[n].score for n in places]
    for n, cand, score in zip(places, ordered, slots, strict=True):
        cand.score = score
        window[n] = cand


_COUNTS = {w: n for n, w in enumerate("two three four five six seven eight nine ten".split(), 2)}
_ORDINALS = {w: n for n, w in enumerate("first second third fourth fifth sixth seventh eighth ninth tenth".split(), 1)}
_ORDINAL_RE = re.compile(
    r"\bthe\s+(" + "|".join([*_ORDINALS, "last", "final"]) + r"|(?:[1-9]|10)(?:st|nd|rd|th))\s+([a-z][a-z-]*)", re.IGNORECASE
)
_COUNT_RE = re.compile(r"\b(" + "|".join(_COUNTS) + r"|[2-9]|10)\s+(?:[\w-]+\s+){0,2}?([a-z][a-z-]*s)\b", re.IGNORECASE)


def asked_ordinal(question: str) -> tuple[int, int, str] | None:
    """(n, of, stem) for a question about the n-th of ``of`` things it counts: "you created two sad
    songs ... the chorus in the second song" is (2, 2, "song"); "the last" is the ``of``-th. None
    when the question does not both count the things and name one of them by its place."""
    place = _ORDINAL_RE.search(question or "")
    if place is None:
        return None
    stem = query_words(place.group(2))
    for count in _COUNT_RE.finditer(question):
        if stem and query_words(count.group(2)) == stem:
            of = _COUNTS.get(count.group(1).lower()) or int(count.group(1))
            word = place.group(1).lower()
            n = of if word in ("last", "final") else _ORDINALS.get(word) or int(word[:-2])
            return (n, of, stem[0]) if n <= of else None
    return None


def ordinal_first(candidates: list, info: QueryInfo) -> list:
    """For a question about the n-th of the things the assistant made in an earlier chat ("you
    created two sad songs ... the second song"), the n-th of that chat's turns holding one takes the
    first place, when the chat has exactly as many such turns as the question counts (otherwise
    the things may be the items of one turn's list, which the ranking finds as it is).

    The chat is the one of the best-ranked transcript turn; its turns are read in order from the
    tenant's rows, and only a turn already among the candidates is moved."""
    asked = asked_ordinal(info.text) if info.asks_role == "assistant" else None
    anchor = next((c for c in candidates if c.rows.source[c.row] == "sessions"), None)
    if asked is None or anchor is None:
        return candidates
    n, of, stem = asked
    turns = _turns_holding(anchor.rows, anchor.row, info.asks_role, stem)
    if len(turns) != of:
        return candidates
    want = turns[n - 1]
    at = next((p for p, c in enumerate(candidates)
               if c.rows is anchor.rows and tuple(c.rows.turn_ids[c.row]) == want), None)
    return candidates if at is None or at == 0 else to_front(candidates, at)


def _turns_holding(rows, row: int, role: str, stem: str) -> list[tuple[str, ...]]:
    """The turns (as their ids) of ``row``'s transcript, in order, said by ``role`` and holding a
    word of ``stem``."""
    def same(j: int) -> bool:
        return 0 <= j < len(rows) and rows.source[j] == "sessions" and rows.path[j] == rows.path[row]

    first = row
    while same(first - 1):
        first -= 1
    turns: list[tuple[str, ...]] = []
    j = first
    while same(j):
        key = tuple(rows.turn_ids[j])
        if key not in turns and rows.speakers(j) == (role,) and stem in query_words(rows.content(j)):
            turns.append(key)
        j += 1
    return turns
