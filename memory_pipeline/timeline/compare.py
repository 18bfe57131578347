"""How two claims compare: about the same subject, which values changed, of the same kind.

``claims.py`` reads what one sentence claims; supersession (``supersede.py``) asks these of a pair.
"""

from __future__ import annotations

import re

from memory_pipeline.timeline.claims import TIME, Claim, Subject


def same_subject(old: Claim, new: Claim, old_speaker: str | None, new_speaker: str | None) -> bool:
    """False only when both subjects are known and differ; an unknown subject is compatible."""
    a, b = old.subject, new.subject

    def owner(s: Subject, speaker: str | None) -> str | None:
        if s.owner == "self":
            return (speaker or "self").lower()
        return s.owner

    if a.names and b.names and not (a.names & b.names):
        return False
    # A claim about someone named ("Ines lives in Braga") is changed only by one that names them
    # too, or by them speaking: "Tiago lives in Faro" is about someone else.
    for x, y, y_speaker in ((a, new, new_speaker), (b, old, old_speaker)):
        named = {n for n in x.names if n != "self"}
        speaking = bool(y_speaker) and y_speaker.casefold() in named
        if named and not speaking and not any(n in y.sentence.casefold() for n in named):
            return False
    if a.head and b.head:
        if a.head != b.head:
            return a.head in new.nouns or b.head in old.nouns
        oa, ob = owner(a, old_speaker), owner(b, new_speaker)
        if oa and ob and oa != ob:
            return False
        if a.mods and b.mods and not (a.mods & b.mods):
            return False
    return True


def subject_match(old: Claim, new: Claim, old_speaker: str | None, new_speaker: str | None) -> bool:
    """Both subjects are known and the same: one speaker saying "I", one name, one owned noun; a
    claim naming no subject at all ("Lives in Lisbon") is about whom its statement is about
    (passed as its speaker)."""
    a, b = old.subject, new.subject
    speakers = {x.lower() for x in (old_speaker, new_speaker) if x}
    for x, who, y in ((a, old_speaker, b), (b, new_speaker, a)):
        if who and y.names and not (x.first_person or x.names or x.head):
            return who.lower() in y.names
    if a.first_person and b.first_person:
        return old_speaker is not None and old_speaker == new_speaker
    if a.names and b.names:
        return bool(a.names & b.names)
    if (a.first_person and b.names) or (b.first_person and a.names):
        return bool((a.names | b.names) & speakers)
    return bool(a.head and a.head == b.head and a.mods == b.mods)


def changed_classes(old: Claim, new: Claim) -> list[str]:
    """Value classes both claims state where the later one states a value the earlier did not.

    Times count only when both name a day, a clock time or a weekly day: "from May", "until
    October", "yesterday" date a statement or qualify a change, they are not what changed."""
    changed = []
    for k in sorted(old.values.keys() & new.values.keys()):
        if k == TIME:
            if old.precise_times and new.precise_times and new.precise_times - old.precise_times:
                changed.append(k)
        elif added_values(old, new, k):
            changed.append(k)
    return changed


def added_values(old: Claim, new: Claim, klass: str) -> frozenset[str]:
    """The values of a class the later claim states and the earlier did not. A name or a number
    said in part is the same one ("Marcus" for "Marcus Lee", "12" for "12 dollars")."""
    added = new.values.get(klass, frozenset()) - old.values.get(klass, frozenset())
    if klass == TIME:
        return added
    olds = [_words(v) for v in old.values.get(klass, ())]
    return frozenset(v for v in added if not any(_same_name(_words(v), w) for w in olds))


def _words(value: str) -> set[str]:
    """A name's words without their marks: "LGBTQ+" and "LGBTQ" are one name."""
    return {w for w in re.sub(r"[^\w\s]", "", value).split() if w}


def _same_name(a: set[str], b: set[str]) -> bool:
    """One name said in full and in part ("Marcus Lee", "Marcus"); a number added to a name makes
    another one ("Spark" and "Spark 3.5", "Tier 2" and "Tier 3")."""
    extra = (a - b) | (b - a)
    return (a <= b or b <= a) and not any(ch.isdigit() for w in extra for ch in w)


_KIND = {
    "CARDINAL": "count", "PATTERN": "count", "MONEY": "money", "PERCENT": "percent",
    "QUANTITY": "quantity", "DATE": "time", "TIME": "time",
}
"""Kinds a replacing value must share with the replaced one; every recognized name (person, place,
organization, product, language) is one kind, "thing": the small recognizer calls the same city a
place in one sentence and a person in the next. A proper noun it did not recognize is any name."""


def _kinds(claim: Claim, values) -> set[str]:
    return {_KIND.get(label, "any" if label == "PROPN" else "thing") for v in values for label in claim.kinds.get(v, ())}


def replaces_alike(old: Claim, new: Claim, classes: list[str]) -> bool:
    """In each changed class, a new value replaces an old one of the same kind (a date for a date,
    a city for a city, a version for a version, a person for a person). The replaced value is one
    the later claim no longer states, or, when it says it changed ("from 21 November to 28
    November"), one it names again."""
    for k in classes:
        added = added_values(old, new, k)
        replaced = (old.values[k] - new.values[k]) or (old.values[k] & new.values[k] if new.change_cue else frozenset())
        a, b = _kinds(old, replaced), _kinds(new, added)
        if not (a & b or ("any" in a and b & {"thing", "any"}) or ("any" in b and a & {"thing", "any"})):
            return False
    return True


def restated(old: Claim, new: Claim) -> bool:
    """The later claim states no value the earlier did not (in the classes both state)."""
    shared = old.values.keys() & new.values.keys()
    return bool(shared) and not changed_classes(old, new)
