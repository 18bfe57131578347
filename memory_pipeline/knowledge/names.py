"""Which entity mentions are names, and the name each stands for.

The small spaCy model tags interjections ("Wow", "Congrats"), colloquial contractions ("Lemme")
and days ("Tues") as names, and runs a greeting into the name it greets ("Yep Jon"). A mention is
kept when what is left after leading interjections and markers ends in a proper noun (or is a
speaker of the conversation), holds no interjection, and is not a day or month by dateutil.
"""

from __future__ import annotations

import re
from datetime import datetime
from functools import lru_cache

from dateutil import parser as date_parser

_NAME_EDGE_RE = re.compile(r"^(?:the|a|an)\s+|['’]s$", re.I)
_NOT_A_NAME = frozenset(
    "fyi select target utc admin todo ok okay faq api cli sla etc re hi hey thanks node billing settings".split()
)


def plausible_name(name: str) -> bool:
    """Whether a recognized entity reads like a name (the small model also tags "FYI" or "node")."""
    if len(name) < 2 or not name[0].isupper() or any(ch in name for ch in ":;()[]{}<>=|/\\`"):
        return False
    return name.casefold() not in _NOT_A_NAME


def clean_name(text: str) -> str:
    text = " ".join(text.split()).strip(" ,.;:!?\"'()[]")
    previous = None
    while previous != text:
        previous, text = text, _NAME_EDGE_RE.sub("", text).strip()
    return text


# Words the small model tags as names though no one is called that: interjections, discourse
# markers and colloquial contractions (the tagger calls most of them INTJ; these slip through).
_NOT_ENTITIES = frozenset(
    """wanna gonna gotta lemme gimme kinda sorta dunno congrats congratulations woohoo woo yay yep yup nope yeah
    wow omg lol haha hey hi hello thanks cheers btw anyway awesome cool glad sorry bye goodbye aww aw oh ooh
    ugh whoa woah phew yo hmm""".split()
)


def entity_name(ent, known: frozenset[str]) -> str | None:
    """The name an entity mention stands for, or None when it is not a name.

    Leading interjections and discourse markers are dropped ("Yep Jon" -> "Jon"); what is left
    must end in a proper noun (or be a speaker) and hold no interjection or colloquial word."""
    tokens = list(ent)
    while tokens and (tokens[0].pos_ in ("INTJ", "PUNCT", "DET", "CCONJ") or tokens[0].lower_ in _NOT_ENTITIES):
        tokens = tokens[1:]
    if not tokens:
        return None
    name = clean_name(ent.doc[tokens[0].i : tokens[-1].i + 1].text)
    if name in known:
        return name
    if tokens[-1].text in known and ent.start == ent.sent.start:
        return tokens[-1].text  # "Aww John, ..." greets John: a vocative, not a longer name
    if tokens[-1].pos_ != "PROPN" or any(t.pos_ == "INTJ" or t.lower_ in _NOT_ENTITIES for t in tokens):
        return None
    if all(_date_word(t.text) for t in tokens if t.pos_ == "PROPN"):
        return None  # "Fri", "Last Tues": a day the model took for a name
    return name if plausible_name(name) else None


@lru_cache(maxsize=4096)
def _date_word(word: str) -> bool:
    """Whether a word alone reads as a date ("Fri", "Tues", "March"), by dateutil's parser."""
    if not word.isalpha():
        return False
    try:
        date_parser.parse(word, default=datetime(2000, 1, 1))
    except (ValueError, OverflowError):
        return False
    return True
