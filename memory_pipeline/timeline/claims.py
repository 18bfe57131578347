"""What one sentence claims, read from its spaCy parse: about whom, which attribute, which values.

Supersession compares claims, not phrasings. A claim has
- a **subject**: the grammatical subject, with its owner ("my manager": the speaker's; "Nora's
  manager": Nora's), its head noun, the nouns compounded with it ("sales team") and the names in it;
- **values**: the named entities, numbers, versions and addresses it states, grouped in coarse
  classes (time, name, number) because the parser often types one value two ways (Jenkins as a
  person, GitHub Actions as an organization, Porto as a place or an organization);
- an **attribute text**: the sentence with its values masked by their class, which is what two
  claims about the same attribute share whatever the values ("my manager is [NAME]");
- its **key nouns** outside the values, and whether it carries a change cue ("now", "moved",
  "instead", "no longer") or an additive one ("also", "another").

How two claims compare (same subject, changed values, values of one kind) is ``compare.py``'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache

TIME, NAME, NUMBER = "time", "name", "number"
VALUE_CLASSES = {
    # Places are names: the recognizer calls the same city GPE in one sentence and ORG in the next.
    "GPE": NAME, "LOC": NAME, "FAC": NAME,
    "DATE": TIME, "TIME": TIME,
    "PERSON": NAME, "ORG": NAME, "PRODUCT": NAME, "NORP": NAME, "WORK_OF_ART": NAME, "EVENT": NAME,
    "LANGUAGE": NAME, "LAW": NAME,
    "CARDINAL": NUMBER, "MONEY": NUMBER, "PERCENT": NUMBER, "QUANTITY": NUMBER,
}
# Evidence, not the detector: a change cue lowers the similarity two claims need; an additive cue
# says the later claim adds a value instead of replacing one.
CHANGE_CUES = frozenset(
    """now moved move moving relocated switched switch changed change replaced replaces replace instead
    rescheduled postponed pushed delayed slips slipped upgraded upgrade bumped migrated renamed
    correction corrected actually anymore longer sold quit left stopped cancelled canceled extended
    increased raised reduced decreased tightened lowered finally update updated swapped nowadays""".split()
)
ENDING_CUES = frozenset("instead switched replaced sold quit left stopped cancelled canceled anymore".split())
_ENDING_PHRASES = ("no longer", "any more", "no more", "not anymore")
_CHANGE_PHRASES = ("no longer", "any more", "after all", "these days", "no more", "from now on", "going forward")
ADDITIVE_CUES = frozenset("also too additionally another second additional both".split())
# "still" says a value holds ("the draft is still due 4 December"): it restates, it changes nothing.
CONTINUING_CUES = frozenset({"still"})
_CONDITIONS = frozenset({"if", "unless"})
_FIRST_PERSON = frozenset({"i", "me", "we", "us", "my", "our", "mine", "ours", "myself", "ourselves"})
_OTHER_PRONOUNS = frozenset({"he", "she", "they", "it", "you", "his", "her", "their", "its", "your", "this", "that"})
_GENERIC_NOUNS = frozenset(
    """thing things time times day days week weeks month months year years today tomorrow morning
    evening night update bit lot way people everything something anything nothing""".split()
)
_ISO_DAY_RE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_EXTRA_VALUE_RE = re.compile(
    r"\b\d{4}-\d{2}-\d{2}\b"  # a day, which the recognizer often reads as a number
    r"|[\w.+-]+@[\w-]+(?:\.[\w-]+)+"  # an address
    r"|#[\w-]+"  # a channel
    r"|\bv?\d+(?:\.\d+)+\b"  # a version or a decimal
    r"|\b\d{1,2}:\d{2}\b"  # a clock time
    r"|\b\d[\d,]*(?:\.\d+)?\b"  # a number
)
_EXTRA_CLASS = {"@": NAME, "#": NAME}
_RANGE_RE = re.compile(r"\s+(?:to|until|till|through)\s+|\s*[–—]\s*", re.I)
_DAY_RE = re.compile(
    r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}\b|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d"
    r"|\d(?:st|nd|rd|th)?\s+(?:of\s+)?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)",
    re.I,
)
_PRECISE_RE = re.compile(
    r"\b(?:mon|tues|wednes|thurs|fri|satur|sun)days\b|\bevery\s+\w+day\b"  # a weekly day
    r"|\d:\d{2}|\d\s*[ap]\.?m\b"  # a clock time
    r"|\b\d+\s*(?:hours?|days?|minutes?|weeks?|months?|years?)\b",  # a duration
    re.I,
)
_CLOCK_RE = re.compile(r"\d:\d{2}|\d\s*[ap]\.?m\b", re.I)
_BASE = datetime(2000, 1, 1)


@dataclass(frozen=True)
class Subject:
    owner: str | None = None  # "self" for first person, else a normalized name
    head: str | None = None  # head noun of a common-noun subject
    mods: frozenset[str] = frozenset()  # nouns compounded with the head ("sales" team)
    names: frozenset[str] = frozenset()  # names the subject is ("Initech", "Nora")
    first_person: bool = False


@dataclass(frozen=True)
class Claim:
    sentence: str
    subject: Subject
    values: dict[str, frozenset[str]]  # class -> normalized values
    kinds: dict[str, frozenset[str]]  # value -> the recognizer's labels of it ("GPE", "DATE", ...)
    precise_times: frozenset[str]  # time values naming a day, a clock time or a weekly day
    masked: str
    nouns: frozenset[str]
    change_cue: bool
    additive_cue: bool
    question: bool
    cues: tuple[str, ...] = field(default=())
    ending_cue: bool = False  # says something stopped or was replaced ("no longer", "instead", "quit")
    words: int = 0  # words, punctuation left out
    unasserted: bool = False  # a condition ("if you need more") or a request ("open the ticket")
    continuing: bool = False  # says a value holds ("still due 4 December"): it changes nothing
    event: bool = False  # tells what happened ("we went to the beach"), not how things are
    qualified: frozenset[str] = frozenset()  # nouns a value names the kind of ("the LGBTQ community")
    qualifiers: frozenset[str] = frozenset()  # the values that do so ("lgbtq"; "lisbon" in "Lisbon time")

    @property
    def asserts(self) -> bool:
        """States a fact: not a question, a condition or an instruction."""
        return not (self.question or self.unasserted)

    @property
    def has_values(self) -> bool:
        return bool(self.values)


def _norm(text: str) -> str:
    text = re.sub(r"^(?:the|a|an|on|at|in|by)\s+", "", text.strip().lower())
    text = re.sub(r"['’]s$", "", text)
    return re.sub(r"(?<=\d),(?=\d{3})", "", text).strip(" .,;:!?()\"'")


def _noun(token) -> str:
    word = token.lower_
    if token.tag_ in ("NNS", "NNPS") and len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return word


@lru_cache(maxsize=4096)
def _time_key(text: str) -> str:
    """A day as a comparable key: "Saturday 21 November", "21 Nov" and "2026-11-21" are one day
    ("11-21"; the year is left out because many statements omit it). Text that names no
    day and month (a clock time, "in May", "next week") keys as its normalized words."""
    import dateparser

    if not _DAY_RE.search(text):
        return _norm(text)
    parsed = dateparser.parse(
        text, languages=["en"], settings={"REQUIRE_PARTS": ["day", "month"], "RELATIVE_BASE": _BASE}
    )
    return f"{parsed:%m-%d}" if parsed is not None else _norm(text)


def _governor(sent, value: int | None):
    """The verb whose subject the claim is about: one saying that something changed, with its own
    subject ("We replaced Jenkins with GitHub Actions, the VM is gone": "we"); else the nearest one
    governing its last value ("the old HP broke, we print on the Brother now": "we"); else the root."""
    for token in sent:
        if (
            token.pos_ == "VERB" and token.lower_ in CHANGE_CUES and _says_change(token, sent)
            and any(c.dep_ in ("nsubj", "nsubjpass") for c in token.children)
        ):
            return token
    if value is not None:
        token = sent.doc[value]
        for head in [token, *token.ancestors]:
            if any(c.dep_ in ("nsubj", "nsubjpass") for c in head.children):
                return head
    return sent.root


def _subject(sent, speaker: str | None, value: int | None = None) -> Subject:
    root = _governor(sent, value)
    subj = next((t for t in root.children if t.dep_ in ("nsubj", "nsubjpass")), None)
    if subj is None:
        return Subject()
    attr = next((t for t in root.children if t.dep_ in ("attr", "acomp")), None)
    # "Hannah is my manager": the attribute is the owned noun, the name is its value.
    if root.lemma_ == "be" or root.lower_ in ("is", "are", "was", "were", "'s"):
        if attr is not None and attr.pos_ == "NOUN" and subj.pos_ == "PROPN":
            subj = attr
    word = subj.lower_
    if word in _FIRST_PERSON:
        return Subject(owner="self", first_person=True)
    if word in _OTHER_PRONOUNS:
        return Subject()
    owner = None
    names = set()
    mods = set()
    for child in subj.children:
        if child.dep_ == "poss":
            owner = "self" if child.lower_ in _FIRST_PERSON else (None if child.lower_ in _OTHER_PRONOUNS else _norm(child.text))
        elif child.dep_ == "compound" and child.pos_ in ("NOUN", "PROPN", "NUM"):
            mods.add(_noun(child))
    if subj.pos_ == "PROPN":
        span = [t for t in subj.subtree if t.pos_ == "PROPN" and t.dep_ != "poss"]
        names.add(_norm(" ".join(t.text for t in span)) if span else _norm(subj.text))
        return Subject(owner=owner, names=frozenset(names))
    return Subject(owner=owner, head=_noun(subj), mods=frozenset(mods))


def analyze(sent, speaker: str | None = None) -> Claim:
    """The claim of one spaCy sentence span."""
    text = sent.text.strip()
    start = sent.start_char
    spans: list[tuple[int, int, str, tuple[str, ...], str]] = []  # (start, end, class, keys, label)
    for ent in sent.ents:
        klass = VALUE_CLASSES.get(ent.label_)
        if klass is None or (klass != TIME and _ISO_DAY_RE.search(ent.text)):
            continue
        if klass == TIME:  # "21 November to 28 November" is two dates
            keys = tuple(_time_key(part) for part in _RANGE_RE.split(ent.text) if part.strip())
        else:
            keys = (_norm(ent.text),)
        if any(keys):
            spans.append((ent.start_char - start, ent.end_char - start, klass, keys, ent.label_))
    for match in _EXTRA_VALUE_RE.finditer(text):
        a, b = match.span()
        if any(s <= a < e or s < b <= e for s, e, *_ in spans):
            continue
        value = match.group(0)
        if _ISO_DAY_RE.fullmatch(value):
            spans.append((a, b, TIME, (_time_key(value),), "DATE"))
            continue
        klass = _EXTRA_CLASS.get(value[0], NAME if "@" in value else (TIME if ":" in value else NUMBER))
        spans.append((a, b, klass, (_norm(value),), "PATTERN"))
    # Proper nouns the recognizer missed ("Neovim", "Sublime") are names too.
    sent_root = sent[0].i
    for token in sent:
        a = token.idx - start
        if token.pos_ == "PROPN" and token.i != sent_root and not any(s <= a < e for s, e, *_ in spans):
            spans.append((a, a + len(token.text), NAME, (_norm(token.text),), "PROPN"))
    last_value = None
    if spans:
        a = max(s for s, *_ in spans) + start
        last_value = next((t.i for t in sent if t.idx <= a < t.idx + len(t.text)), None)
    subject = _subject(sent, speaker, last_value)
    subject_names = subject.names | ({subject.owner} if subject.owner and subject.owner != "self" else set())
    values: dict[str, set[str]] = {}
    kinds: dict[str, set[str]] = {}
    masked, last = [], 0
    for a, b, klass, keys, label in sorted(spans):
        if a < last:
            continue
        masked.append(text[last:a])
        if label == "PERSON" and set(keys) & subject_names:
            masked.append(text[a:b])  # the person a claim is about is not a value of it
        else:
            masked.append(f"[{klass}]")
            for key in filter(None, keys):
                values.setdefault(klass, set()).add(key)
                kinds.setdefault(key, set()).add(label)
        last = b
    masked.append(text[last:])
    in_value = {t.i for t in sent for s, e, *_ in spans if s <= t.idx - start < e}
    # Value words that name the kind of a noun outside the values: "[LGBTQ] community", "[Lisbon] time".
    qualifying = [t.i for t in sent if t.i in in_value and t.dep_ in ("compound", "amod", "nmod") and t.head.i not in in_value]
    times = values.get(TIME, set())
    # A capitalized first word the tagger calls a proper noun ("Offsite rescheduled") is a noun here.
    nouns = frozenset(
        _noun(t) for t in sent
        if t.pos_ in ("NOUN", "PROPN") and t.i not in in_value and t.lower_ not in _GENERIC_NOUNS and len(t.text) > 2
    )
    words = {t.lower_ for t in sent}
    event = _happened(sent.root)
    cues = tuple(sorted({
        t.lower_ for t in sent
        # What happened changed something when its verb says so ("we pushed the cutover"), not
        # because of an adverb ("last Friday I finally took the kids to a workshop").
        if t.lower_ in CHANGE_CUES and _says_change(t, sent) and (t.pos_ in ("VERB", "AUX") or not _happened(t.head))
    }))
    return Claim(
        sentence=text,
        subject=subject,
        values={k: frozenset(v) for k, v in values.items()},
        kinds={k: frozenset(v) for k, v in kinds.items()},
        precise_times=frozenset(t for t in times if re.fullmatch(r"\d{2}-\d{2}", t) or _PRECISE_RE.search(t)),
        masked=" ".join("".join(masked).split()),
        nouns=nouns,
        change_cue=bool(cues) or any(p in text.lower() for p in _CHANGE_PHRASES),
        ending_cue=bool(set(cues) & ENDING_CUES) or any(p in text.lower() for p in _ENDING_PHRASES),
        words=sum(1 for t in sent if not t.is_punct),
        additive_cue=bool(words & ADDITIVE_CUES),
        question=text.rstrip().endswith("?"),
        cues=cues,
        unasserted=_conditional(sent) or _imperative(sent),
        continuing=bool(words & CONTINUING_CUES),
        event=event,
        qualified=frozenset(_noun(sent.doc[i].head) for i in qualifying),
        qualifiers=frozenset(
            key for s, e, _, keys, _ in spans for key in keys
            if key and any(s <= sent.doc[i].idx - start < e for i in qualifying)
        ),
    )


def _says_change(token, sent) -> bool:
    """Whether a change word says that something changed. A verb counts when it tells what happened
    ("moved", "we've switched"), not when it asks for a change ("move the report") or describes a
    thing ("the powder left after shredding"); a noun only as the sentence's heading ("Update: ...",
    "Correction: ..."), not as a thing ("a WAF rule change"); "instead of doing" names another way
    of doing something, not a replaced value; a word inside a hyphenated one ("self-update") is no word."""
    doc = token.doc
    if (token.i + 1 < len(doc) and doc[token.i + 1].text == "-" and not token.whitespace_) or (
        token.i > 0 and doc[token.i - 1].text == "-" and not doc[token.i - 1].whitespace_
    ):
        return False
    if token.pos_ in ("VERB", "AUX"):
        return token.tag_ in ("VBD", "VBN", "VBG", "VBZ") and token.dep_ not in ("acl", "amod")
    if token.pos_ in ("NOUN", "PROPN"):
        return token.i == next((t.i for t in sent if not t.is_punct), token.i)
    if token.lower_ == "instead":
        return not any(c.lower_ == "of" and any(g.tag_ == "VBG" for g in c.children) for c in token.children)
    return True


def _happened(verb) -> bool:
    """A verb telling what happened ("went", "took"), not how things are ("was", "had")."""
    return verb.tag_ == "VBD" and verb.lemma_ not in ("be", "have")


def _conditional(sent) -> bool:
    """A sentence that holds only if something else does ("If you need ~1,600/min, I can request it")."""
    return any(t.dep_ == "mark" and t.lower_ in _CONDITIONS for t in sent)


def _imperative(sent) -> bool:
    """An instruction ("Open the increase request", "Create the service account"): a sentence led
    by a bare verb with no subject states nothing that could later change."""
    root = sent.root
    first = next((t for t in sent if not t.is_punct), None)
    return (
        first is not None and root.tag_ == "VB" and root.i == first.i
        and not any(c.dep_ in ("nsubj", "nsubjpass", "expl", "csubj", "aux") for c in root.children)
    )


def without_values(claim: Claim, names: frozenset[str], short_forms: bool = False) -> Claim:
    """The claim without these values (the names of the people talking, as they address each other;
    with ``short_forms``, also a name's first letters said as a name of its own: "Mel" for Melanie)."""
    from dataclasses import replace

    def named(value: str) -> bool:
        return value in names or (short_forms and len(value) >= 3 and value.isalpha()
                                  and any(n.startswith(value) for n in names))

    if not names or not any(named(v) for vs in claim.values.values() for v in vs):
        return claim
    values = {k: kept for k, v in claim.values.items() if (kept := frozenset(x for x in v if not named(x)))}
    return replace(claim, values=values)
