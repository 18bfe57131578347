"""The one sentence classifier, and typed memories from what was said and written down.

``classify`` gives the memory type of a sentence; every reader of sentences asks it: typed
memories, dreaming, and the episode cues of the compaction flush (``cue_kind``: preference,
decision, action or fact, a view of the same answer).

spaCy splits text into sentences and names the people, places and organisations in them; a
sentence becomes a memory when a pattern of its type matches ("I prefer ...", "I work at ...",
"my wife Sarah ...", "next week I'm ...", "remind me to ..."). The first matching type wins, in
the order of ``RULES``. Dates in the sentence are resolved against the time it was said
(``dates.find_when``): a future date is when it ``happens_at``, a past one when it ``occurred_at``.

Transcripts: every speaker's sentences are read as statements (``text.statements``: who
said them, about whom, in which turn), not an assistant's, whose restatements would store every
fact twice; a memory is stored in the third person ("Jon lost his job") and names its subject, and
greetings, compliments and questions (low salience) hold none. Markdown: each bullet or paragraph is read with the heading it sits under,
which types it when the heading says what it holds ("## Preferences", "## Identity"); a task
list's item by its box ("- [ ]" a todo, "- [x]" done that day).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, time
from zoneinfo import ZoneInfo

from memory_pipeline import progress
from memory_pipeline.text.dates import find_when
from memory_pipeline.text.salience import dated_in_past
from memory_pipeline.text.statements import load_nlp, statements
from memory_pipeline.text.summarize import split_sentences

MAX_CONTENT = 400
EXTRACTOR_VERSION = "patterns-14"
# A transcript sentence below these holds no memory: greetings, compliments, reactions ("I love
# that!"); what a speaker explicitly asks to keep (a todo, a preference, a decision) needs less, but
# it must name something ("Yeah, I love to." does not: ``Features.substance``).
MIN_SALIENCE = 1.0
MIN_SALIENCE_ASKED = 0.2
_ASKED = frozenset({"todo", "preference", "decision"})

_RELATION_NOUNS = (
    "wife|husband|partner|daughter|son|kids?|children|mother|father|mom|dad|sister|brother|"
    "manager|boss|editor|team|colleague|cto|ceo"
)
_MONTHS = "jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec"
_NAME = "(?-i:[A-Z])[\\w'-]+"  # a capitalized word, under the rules' IGNORECASE too
# What the other speaker just offered, pointed at rather than named: "those suggestions", "both of
# these", "your idea". Liking it is a reaction and checking it out a thanks: neither names a thing.
_OFFERED = r"(?:(?:both|all|each|some|any|one) of )?(?:those|these|that|this|your)\b"
# One rule set for every reader of a sentence: typed memories read its type, the episode cues
# (``cue_kind``) read the same answer as preference, decision, action or fact.
RULES: tuple[tuple[str, float, re.Pattern], ...] = tuple(
    (kind, confidence, re.compile(pattern, re.I))
    for kind, confidence, pattern in (
        # a reminder asked for ("remind me to", "can you remind me about"), not one things give
        # ("moments like these remind me to", "a tattoo to remind me about it")
        ("todo", 0.85, r"(?:^|[,;:]\s*)(?:(?:also|and|oh|hey|just|please|pls|so|ok|okay),?\s+){0,2}remind (?:me|us|\w+) (?:to|on|about)\b"
                       r"|\b(?:(?:can|could|would|will) you|you to)(?: please| also| just)? remind (?:me|us|\w+) (?:to|on|about)\b"
                       r"|\bset a reminder\b|\bdon'?t let me forget\b|\bto-?do\b"
                       r"|\bI(?:'ll| will) (?:send|ask|email|call|check|follow up|get back|invite)\b"
                       rf"(?! out {_OFFERED})"
                       # items named after the label ("Open items: renew the cert"), not a mention of
                       # them ("list my open items, please" asks for them now)
                       r"|\b(?:action|open) items?\s*:(?=\s*\S)|\bfollow up (?:on|with)\b|\bwill send\b"),
        ("decision", 0.8, r"\b(?:I|we)(?:'ve| have)? decided\b|\bwe(?:'ll| will) (?:do|go with|use|switch)\b"
                          r"|\b(?:I|we|\w+) (?:pushed|postponed|rescheduled|moved the deadline|cut the)\b|\bI accepted\b"
                          r"|\b(?:I|we)(?:'ve| have)? cho(?:se|sen)\b|\blet'?s go with\b|\bapproved\b|\bdecision\b"
                          r"|\bdecided? to\b|\bpush(?:ed|es)? (?:\w+ ){0,5}to\b|\b(?:I'm|I am|we're|we are|we'll|we will) (?:go|going) with\b|\bagreed (?:to|on)\b|\bsettled on\b|\bfinal answer\b|\bit is then\b"
                          r"|\bcancel(?:l?ed|ling)\b|\bnarrowed (?:\w+ ){0,3}to\b|\breplac(?:e|ed|ing) (?:\w+ ){0,4}with\b"
                          r"|\b(?:move[ds]?|moving|switch(?:ed)?) (?:\w+ ){0,5}to (?:(?:mon|tues|wednes|thurs|fri|satur|sun)days?"
                          rf"|next|the \d|\d|(?:{_MONTHS})\w*)\b|^(?!(?:here|there|that|this|what|so)\b)\S+(?: \S+)? it is[.!]?$"),
        # A liking of what the other speaker just offered ("I like those suggestions", "I love the
        # idea of a cream mat") is a reaction, not a lasting taste.
        ("preference", 0.8, r"\b(?:I|we) (?:really |much |strongly )?(?:prefer|like|love|hate|dislike|enjoy|can'?t stand)\b"
                            rf"(?! {_OFFERED}| the (?:[\w-]+ ){{0,6}}(?:ideas?|suggestions?|tips?|options?)\b| the sound of\b)"
                            r"|\bI don'?t (?:like|want)\b|\bplease (?:don'?t|do not|never|always)\b|\bprefers?\b"
                            r"|\bI (?:never|always) want\b|\bkeep it (?:short|brief)\b|\bno (?:phone )?calls\b"
                            r"|\b(?:email|text|chat) only\b|\bnever wants?\b|\bdoes not want\b|\bI(?:'d| would) rather\b"
                            r"|\b(?:don'?t|do not|never|always) (?:schedule|call|email|send|contact|book)\b|\bno (?:meetings|emails)\b"
                            r"|\bnothing after \d|\bmy favou?rite\b|\bI(?:'m| am) (?:allergic|vegetarian|vegan)\b"
                            r"|^(?:please )?remember (?:that )?I\b"),
        ("identity", 0.8, r"\bmy name is\b|\bI(?:'m| am) (?:a|an) [\w-]+(?: [\w-]+)? (?:at|for|in|from)\b"
                          r"|\bI work (?:at|for|as|in)\b|\bI live in\b"
                          # where the speaker is from or based, not where a trip takes them ("while I'm in Tokyo")
                          r"|(?<!\bwhile )(?<!\bwhen )(?<!\bonce )\bI(?:'m| am) (?:in|from|based in) [A-Z]"
                          r"|\b(?:I|has) (?:moved|relocated) (?:to|from)\b|\blives in\b|\bbased in\b|\btime ?zone\b"
                          # who someone is to the speaker: "my wife Sarah", "Dana, my manager", "my manager is
                          # Tomás", "my daughter is 7" (a relative merely named in a deed is not an identity)
                          rf"|\bmy (?:{_RELATION_NOUNS}),? {_NAME}|{_NAME}, my (?:{_RELATION_NOUNS})\b"
                          rf"|\bmy (?:{_RELATION_NOUNS}) (?:is|are|was|were) (?:a |an |called |named |\d|{_NAME})"
                          # a job held, not one lost or left ("lost my job at ...": what happened)
                          r"|\b(?:head|lead|director|vp) of\b"
                          r"|(?<!\blost )(?<!\blose )(?<!\bquit )(?<!\bleft )(?<!\blosing )(?<!\bquitting )(?<!\bleaving )"
                          r"\b(?:my|our|his|her|their|a|the|new|[\w-]+'s) job (?:at|as)\b"),
        ("goal", 0.7, r"\b(?:I|we) (?:want|need|plan|hope|aim|intend|would like) to\b|\b(?:my|our) goal\b"
                      r"|\btarget\b|\bI need this\b|\bdeadline\b|\bdue\b"),
        ("anomaly", 0.65, r"\b(?:worried|broken|outage|spiked|jumped|failing|failed|errors?|bug|429s?|not working"
                          r"|doesn'?t work|timed out|contradicted)\b"),
        ("routine", 0.7, r"\b(?:every|each) (?:day|night|week|morning|evening|month|(?:mon|tues|wednes|thurs|fri|satur|sun)day)\b"
                         r"|\bnightly\b|\bdaily\b|\b(?:I|we) (?:always|usually|never|normally)\b"),
        ("fact", 0.7, r"\bbirthday\b|\banniversary\b|\bmy [\w-]+ (?:is|are)\b|\bour [\w-]+ (?:is|are)\b"),
        ("event", 0.7, r"\b(?:I|we)(?:'m| am| are|'re) (?:\w+ing)\b|\b(?:I|we) (?:have|had) (?:a|an|the|my|our) "
                       r"(?:meeting|call|interview|visit|appointment|presentation|trip|test)\b|\bwent (?:well|badly)\b"
                       r"|\b(?:I|we) (?:ran|visited|met|presented|moved|shipped|started|finished|lost|quit)\b"
                       r"|\b(?:lost|quit|left) (?:my|our) (?:job|position)\b"),
    )
)
_RELATIVE_RE = re.compile(rf"\bmy (?:{_RELATION_NOUNS})\b", re.I)
_HEADING_TYPES = (
    ("identity", re.compile(r"identity|about|profile|who\b", re.I)),
    ("preference", re.compile(r"preferen|likes", re.I)),
    ("goal", re.compile(r"goal|project|objective|deadline", re.I)),
    ("todo", re.compile(r"todo|to-do|open items|reminder", re.I)),
    ("decision", re.compile(r"decision", re.I)),
    ("routine", re.compile(r"routine|habit", re.I)),
    ("fact", re.compile(r"people|family|context|facts?", re.I)),
)
_DATED_NOTE_RE = re.compile(r"(?:^|/)(\d{4}-\d{2}-\d{2})\.md$")
_BULLET = r"^\s*(?:[-*+]|\d+[.)])\s+"  # a list item's marker, "- " or "1. "
_BULLET_RE = re.compile(_BULLET)
_MD_NOISE_RE = re.compile(rf"\*\*|__|`|{_BULLET}(?:\[[ xX]\]\s+)?")
# A task list's item (GitHub-flavoured Markdown): "- [ ] call the plumber" is open, "- [x] renew
# the passport" done, and so is an item struck through whole ("- ~~book the venue~~").
_TASK_RE = re.compile(rf"{_BULLET}(?:\[(?P<box>[ xX])\]\s+\S|~~(?P<struck>(?:(?!~~).)+)~~\s*$)")
OPEN, DONE = "open", "done"
_CODE_BLOCK_RE = re.compile(r"```.*?(?:```|$)", re.S)
_TRIVIAL_RE = re.compile(r"^(?:ok(?:ay)?|thanks?(?: you)?|perfect|good|great|fine|hi|hello|yes|no)\b[.!,]?\s*\w{0,12}[.!]?$", re.I)


@dataclass(frozen=True)
class Passage:
    """Text to read: where it comes from, when it was said or written, and under which heading."""

    text: str
    said_at: datetime  # timezone aware
    source: str  # transcript | markdown
    source_ref: str  # path#Lline
    section: str | None = None
    dated: bool = True  # False for undated notes: their dates are not "when it happened"
    subject: str | None = None  # whom a transcript sentence is about
    stored: str | None = None  # a transcript sentence in the third person, as it is stored
    salience: float | None = None
    past: bool = False  # a date it names is when a past deed happened (``salience.dated_in_past``)
    substance: bool = True  # it names a thing, a name, a number, a date or an activity (``Features.substance``)
    task: str | None = None  # a note's task item: OPEN ("- [ ] ...") or DONE ("- [x] ...", struck through)


@dataclass(frozen=True)
class Extracted:
    memory_type: str
    content: str
    reasoning: str
    occurred_at: datetime | None
    happens_at: datetime | None
    confidence: float
    source: str
    source_ref: str


def classify(sentence: str, section_type: str | None = None, dated: bool = False) -> tuple[str, float, str] | None:
    """(memory type, confidence, why) of a sentence, or None when it holds no memory.

    A heading that says what its bullets are ("## Preferences") types them, except that a todo
    or a decision is always one; a sentence that matches nothing but names a date is an event.
    """
    for kind, confidence, pattern in RULES:
        match = pattern.search(sentence)
        if match and (section_type is None or kind in ("todo", "decision")):
            return kind, confidence, f"pattern {kind}: {match.group(0)!r}"
    if section_type:
        return section_type, 0.7, f"typed {section_type} by its heading"
    if dated:
        return "event", 0.6, "a dated statement"
    relative = _RELATIVE_RE.search(sentence)
    if relative:  # "my son got into an accident": about someone close, said without a date
        return "observation", 0.6, f"about a relation: {relative.group(0)!r}"
    return None


# The episode cues (what the compaction flush and dreaming keep) are a view of the memory types.
PREFERENCE = "preference"
DECISION = "decision"
ACTION = "action"
FACT = "fact"
CUE_OF_TYPE = {"preference": PREFERENCE, "decision": DECISION, "todo": ACTION, "goal": ACTION}
_NAMED_RE = re.compile(r"(?<=\s)[A-Z][a-z]+|\d")


@dataclass(frozen=True)
class Cue:
    kind: str
    text: str


def cue_kind(sentence: str, from_user: bool) -> str | None:
    """Preference, decision, action or fact: the memory type of a sentence as the cues read it.

    Questions and sentences under three words never count; preferences and facts count only in
    the user's own words. A type other than a todo, goal, preference or decision is a fact, and so
    is a user's sentence of five words or more that names someone or a number."""
    text = sentence.strip()
    if len(text.split()) < 3 or text.endswith("?"):
        return None
    typed = classify(text)
    kind = CUE_OF_TYPE.get(typed[0], FACT) if typed else None
    if kind in (PREFERENCE, FACT) and not from_user:
        return None
    if kind is None and from_user and len(text.split()) >= 5 and _NAMED_RE.search(text):
        return FACT
    return kind


def cues(text: str, from_user: bool) -> list[Cue]:
    """The cues of a text, one per sentence that has one, in order."""
    out = []
    for sentence in split_sentences(text):
        kind = cue_kind(sentence, from_user)
        if kind:
            out.append(Cue(kind, sentence.strip()))
    return out


def transcript_passages(turns: Sequence, path: str, user_name: str = "user", nlp=None) -> list[Passage]:
    """Every speaker's sentences of a parsed transcript (not an assistant's, whose restatements
    would store each fact twice), each with its time, its subject and its third-person text."""
    out = []
    for s in statements(turns, user_name, nlp, path=path):
        if s.speaker is not None and s.said_at is not None:
            out.append(Passage(s.said, s.said_at, "transcript", s.ref, subject=s.subject, stored=s.text,
                               salience=s.salience, past=s.features.dated_in_past, substance=s.features.substance))
    return out


def markdown_passages(text: str, path: str, tz: ZoneInfo, written_at: datetime) -> list[Passage]:
    """Bullets and paragraphs of a Markdown note, each with its heading and line."""
    match = _DATED_NOTE_RE.search(path)
    if match:
        try:
            day = datetime.fromisoformat(match.group(1)).date()
        except ValueError:
            raise ValueError(f"{match.group(1)} is not a date (a dated note is memory/YYYY-MM-DD.md)") from None
        said_at = datetime.combine(day, time(12), tzinfo=tz)
        dated = True
    else:
        said_at, dated = written_at, False
    out: list[Passage] = []
    section: str | None = None
    block: list[str] = []
    start = 0

    def flush() -> None:
        if block:
            joined = " ".join(s.strip() for s in block)
            task = _TASK_RE.match(joined)
            state = None if task is None else OPEN if task["box"] == " " else DONE
            if task is not None and task["struck"]:
                joined = task["struck"]
            cleaned = _MD_NOISE_RE.sub("", joined).replace("**", "").strip()
            if len(cleaned) >= 12:
                out.append(Passage(cleaned, said_at, "markdown", f"{path}#L{start}", section, dated, task=state))
        block.clear()

    in_code = False
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("```"):
            in_code = not in_code
            flush()
            continue
        if in_code:
            continue
        if stripped.startswith("#"):
            flush()
            section = stripped.lstrip("#").strip() or section
            continue
        if not stripped:
            flush()
            continue
        if _BULLET_RE.match(line) or not block:
            flush()
            start = number
        block.append(stripped)
    flush()
    return out


def section_type(section: str | None) -> str | None:
    if not section:
        return None
    for kind, pattern in _HEADING_TYPES:
        if pattern.search(section):
            return kind
    return None


def extract(passages: Sequence[Passage], tz: ZoneInfo, nlp=None) -> list[Extracted]:
    """Typed memories of passages, one per sentence that matches a rule, in passage order.

    A transcript sentence (already parsed into a statement) is matched as said and stored in the
    third person; a Markdown passage is parsed here and read whole."""
    if not passages:
        return []
    notes = [p for p in passages if p.stored is None]
    docs = iter(nlp_pipe(notes, nlp)) if notes else iter(())
    out: list[Extracted] = []
    for passage in passages:
        progress.advance("passages read", 1, len(passages))
        if passage.stored is not None:
            item = _memory(passage, passage.text, passage.stored, None, tz, [])
            floor = MIN_SALIENCE_ASKED if item is not None and item.memory_type in _ASKED else MIN_SALIENCE
            if item is not None and passage.substance and (passage.salience or 0.0) >= floor:
                out.append(item)
            continue
        doc = next(docs)
        heading_type = section_type(passage.section)
        past = any(dated_in_past(sent) for sent in doc.sents)
        item = _memory(replace(passage, past=past), doc.text, " ".join(doc.text.split()), heading_type, tz, doc.ents)
        if item is not None:
            out.append(item)
    return out


def nlp_pipe(passages: Sequence[Passage], nlp=None):
    nlp = nlp or load_nlp()
    return nlp.pipe([_CODE_BLOCK_RE.sub(" ", p.text)[:5000] for p in passages], batch_size=32)


def _memory(passage: Passage, said: str, stored: str, heading_type: str | None, tz: ZoneInfo, ents) -> Extracted | None:
    """The typed memory of one sentence or bullet, or None."""
    said = " ".join(said.split())
    if len(said) < 12 or _TRIVIAL_RE.match(said) or said.endswith("?"):
        return None
    when = find_when(said, passage.said_at, tz, relative=passage.dated, past=passage.past)
    if passage.task == OPEN:  # a box to tick is a todo whatever its words
        typed = ("todo", 0.9, "an open task item")
    elif passage.task == DONE:  # a ticked one is no longer to do: what was done that day
        if not passage.dated:
            return None  # (a profile's finished task says nothing of when it was done)
        typed, stored = ("event", 0.8, "a task marked done"), f"Done: {stored}"
    else:
        typed = classify(said, heading_type, dated=when is not None)
    if typed is None:
        return None
    kind, confidence, why = typed
    occurred_at = passage.said_at if passage.dated else None
    happens_at = None
    if when is not None:
        if when >= _day_start(passage.said_at, tz) or kind in ("todo", "goal"):
            happens_at = when
        elif passage.dated:
            occurred_at = when
    if kind == "event" and passage.task is None and (happens_at is None and occurred_at is None or len(said.split()) < 5):
        return None  # "Several things today." is not an event
    if passage.subject and not re.search(rf"\b{re.escape(passage.subject)}\b", stored):
        stored = f"{passage.subject}: {stored}"  # "Carol: Keep it short." names whom it is about
    people = sorted({e.text for e in ents if e.label_ in ("PERSON", "ORG", "GPE")})
    reasoning = why + (f"; about {passage.subject}" if passage.subject else "")
    reasoning += f"; mentions {', '.join(people)}" if people else ""
    return Extracted(
        kind, stored[:MAX_CONTENT], reasoning, occurred_at, happens_at, confidence, passage.source, passage.source_ref,
    )


def _day_start(at: datetime, tz: ZoneInfo) -> datetime:
    local = at.astimezone(tz)
    return local.replace(hour=0, minute=0, second=0, microsecond=0).astimezone(UTC)
