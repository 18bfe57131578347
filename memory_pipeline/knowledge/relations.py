"""Entities and relations from conversation turns with spaCy: named entities, dependency rules.

The model is loaded once per process, whole: the rules read part-of-speech tags and lemmas as
well as dependency labels and entity types (the tagger, attribute ruler and lemmatizer cost about
half the documents per second of parser and NER alone; see bench/README.md).

Entities are named entities whose head is a proper noun, or a speaker of the conversation, with
leading interjections dropped ("Yep Jon" -> "Jon"; ``names.entity_name``); a single word that is
capitalized only where it opens a sentence ("Startin") is not a name.

Rules, each with a confidence:
- roles: "my manager is X", "X, my manager", "my editor X", "your account manager X"
  -> (speaker, manager, X); family and work roles such as manager or editor hold one value at a time;
- residence: "I live in X", "I'm in X", "I moved to X", "I'm based in X" -> (speaker, lives_in, X);
- employer: "I work at/for X", "I joined X", "a job at X" -> (speaker, works_at, X);
- preference: "I prefer X" -> (speaker, prefers, X);
- actions (``actions.py``): a person as the subject of a deed, a liking or a plan with a noun
  object, named or not: (Gina, opened, store), (Jon, has_pet, puppy), (Jon, works_as, banker);
- any verb linking two named entities, or the speaker and a named entity (low confidence).
First person means the speaker of the turn; "you" means the person spoken to: the user in an
assistant's turn, the other speaker in a talk between named people.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from memory_pipeline.knowledge.actions import JOB_NOUNS, LIGHT_VERBS, actions, happened_or_ongoing
from memory_pipeline.knowledge.names import clean_name, entity_name
from memory_pipeline.text.salience import DATE_TYPES, NUMBER_TYPES
from memory_pipeline.text.statements import addressees, display_name, parse, speaker_of, words_and_captions
from memory_pipeline.text.statements import load_nlp

log = logging.getLogger(__name__)

UNUSED_COMPONENTS: tuple[str, ...] = ()  # the rules read tags and lemmas: the whole pipeline runs
ENTITY_TYPES = frozenset({"PERSON", "ORG", "GPE", "LOC", "FAC", "PRODUCT", "EVENT", "WORK_OF_ART", "NORP", "LAW"})
PLACE_TYPES = frozenset({"GPE", "LOC", "FAC"})
NOT_THINGS = DATE_TYPES | NUMBER_TYPES
"""Entity types that name when or how much, never a thing a relation can point at ("moved in May")."""

SINGLE_ROLES = frozenset(
    """manager boss supervisor advisor adviser editor mentor partner wife husband girlfriend boyfriend
    fiance fiancee landlord doctor therapist lawyer accountant account_manager line_manager mother
    father mom dad cto ceo""".split()
)
MULTI_ROLES = frozenset(
    """colleague coworker co-worker friend teammate engineer sister brother daughter son child kid
    neighbor neighbour cousin client customer contact""".split()
)
ROLE_NOUNS = frozenset(r.split("_")[-1] for r in SINGLE_ROLES | MULTI_ROLES)
SINGLE_VALUED = frozenset({"lives_in", "works_at", "works_as"}) | SINGLE_ROLES

_FIRST = {"i": "speaker", "me": "speaker", "my": "speaker", "mine": "speaker", "myself": "speaker"}
_SECOND = {"you": "addressee", "your": "addressee", "yours": "addressee", "yourself": "addressee"}
_BE = frozenset({"be", "am", "'m", "’m", "is", "'s", "’s", "are", "'re", "’re", "was", "were", "been"})
_LIVE = frozenset({"live", "lives", "lived", "living", "moved", "move", "moving", "relocated", "relocate", "relocating", "based", "settled"})
_WORK = frozenset({"work", "works", "worked", "working"})
_JOIN = frozenset({"joined", "join", "joining"})
_PREFER = frozenset({"prefer", "prefers", "preferred"})
_ROLE_SKIP_MODIFIERS = frozenset({"new", "old", "former", "current", "previous", "future", "interim", "acting"})
_CODE_BLOCK_RE = re.compile(r"```.*?(```|$)", re.S)


@dataclass(frozen=True)
class Utterance:
    """A text to read, who said it, and when."""

    text: str
    line: int
    ts: datetime | None
    speaker: str | None  # whom "I" refers to; None for the assistant or a summary
    addressee: str | None  # whom "you" refers to


@dataclass(frozen=True)
class Fact:
    subject: str
    subject_type: str
    predicate: str
    object: str
    object_type: str
    rule: str
    confidence: float
    evidence: str
    line: int
    ts: datetime | None

    @property
    def single_valued(self) -> bool:
        return self.predicate in SINGLE_VALUED


@dataclass
class Extraction:
    mentions: list[tuple[str, str, int, datetime | None]] = field(default_factory=list)  # (name, type, line, ts)
    facts: list[Fact] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


def utterances(turns, compactions, user_name: str) -> list[Utterance]:
    """What to read from a session: every turn, and compaction summaries (third person).

    A turn's words are read on one line without its attachments, as its summary reads them
    (``text.statements.clean_text``), so the summary's parse serves; each attachment's caption
    ("[shares a photo of ...]") is read apart, as said by the turn's speaker. Read whole, a turn
    with a caption was parsed a second time: a fifth of the LoCoMo dev turns, and the same facts
    and mentions either way."""
    out = []
    speakers = [speaker_of(turn.role, user_name) for turn in turns]
    for turn, speaker, addressee in zip(turns, speakers, addressees(speakers, display_name(user_name)), strict=True):
        words, captions = words_and_captions(turn.content)
        out += [Utterance(text, turn.line, turn.ts, speaker, addressee) for text in (words, *captions) if text]
    for line, text, ts in compactions:
        out.append(Utterance(text, line, ts, None, None))
    return out


class _Sentence:
    """Rule helpers over one parsed sentence of one utterance."""

    def __init__(self, sent, utterance: Utterance, known: frozenset[str] = frozenset()):
        self.sent = sent
        self.u = utterance
        self.known = known
        self.ents = {}
        for ent in sent.ents:
            for token in ent:
                self.ents[token.i] = ent

    def person(self, token) -> str | None:
        word = token.lower_
        if word in _FIRST:
            return self.u.speaker
        if word in _SECOND:
            return self.u.addressee
        return None

    def who(self, token) -> str | None:
        """The person a subject token stands for: a pronoun's referent, a speaker, a PERSON."""
        named = self.person(token)
        if named:
            return named
        if token.text in self.known:
            return token.text
        ent = self.entity(token, {"PERSON"})
        return clean_name(ent.text) if ent is not None and token.pos_ == "PROPN" else None

    def entity(self, token, types: Iterable[str] = ENTITY_TYPES):
        ent = self.ents.get(token.i)
        return ent if ent is not None and ent.label_ in types else None

    def subject_of(self, verb):
        subjects = [c for c in verb.children if c.dep_ in ("nsubj", "nsubjpass")]
        if subjects:  # "Hi Maria, ... I'm volunteering": the parser calls the greeted name a subject too
            return min(subjects, key=lambda c: abs(verb.i - c.i))
        if verb.dep_ in ("acomp", "xcomp", "conj", "advcl") and verb.head is not verb:
            return self.subject_of(verb.head)
        return None

    def fact(self, subject, s_type, predicate, obj, o_type, rule, confidence) -> Fact:
        return Fact(
            subject, s_type, predicate, clean_name(obj), o_type, rule, confidence,
            self.sent.text.strip()[:300], self.u.line, self.u.ts,
        )


def _role_name(token) -> str:
    parts = [c.lower_ for c in token.children if c.dep_ == "compound" and c.i < token.i and c.lower_ not in _ROLE_SKIP_MODIFIERS]
    return "_".join([*parts, token.lower_]).replace("-", "_")


def _phrase_without_conjuncts(token) -> str:
    """The words of a token's subtree up to its first coordinated part ("dark mode and ...")."""
    cut = [c.left_edge.i for c in token.children if c.dep_ in ("cc", "conj", "punct") and c.i > token.i]
    end = min(cut) if cut else token.right_edge.i + 1
    return token.doc[token.left_edge.i : end].text


def _roles(s: _Sentence) -> Iterable[Fact]:
    for tok in s.sent:
        if tok.lower_ not in ROLE_NOUNS or s.entity(tok):
            continue
        owner = next((s.person(c) for c in tok.children if c.dep_ == "poss"), None)
        if not owner:
            continue
        target = None
        if tok.dep_ == "appos":
            target = s.entity(tok.head, {"PERSON"})
        if target is None:
            target = next((s.entity(c, {"PERSON"}) for c in tok.children if c.dep_ == "appos" and s.entity(c, {"PERSON"})), None)
        if target is None and tok.i + 1 < len(tok.doc):
            target = s.entity(tok.doc[tok.i + 1], {"PERSON"})
        if target is None and tok.dep_ in ("nsubj", "nsubjpass", "attr") and tok.head.lower_ in _BE:
            target = next(
                (s.entity(c, {"PERSON"}) for c in tok.head.children if c is not tok and s.entity(c, {"PERSON"})), None
            )
        if target is None or clean_name(target.text) in (owner, s.u.speaker, s.u.addressee):
            continue  # "Glad your son is okay, Melanie": a vocative, not the son's name
        role = _role_name(tok)
        if role not in SINGLE_ROLES and role not in MULTI_ROLES:
            role = tok.lower_
        yield s.fact(owner, "PERSON", role, target.text, "PERSON", "role", 0.85)


def _residence_and_work(s: _Sentence) -> Iterable[Fact]:
    for tok in s.sent:
        word = tok.lower_
        if any(c.dep_ == "neg" for c in tok.children):
            continue
        subject = s.subject_of(tok)
        person = s.person(subject) if subject is not None else None
        if not person:
            continue
        if word in _LIVE or word in _BE:
            wanted = {"in"} if word in _BE else {"in", "to"}
            for prep in tok.children:
                if prep.dep_ != "prep" or prep.lower_ not in wanted:
                    continue
                for obj in prep.children:
                    if obj.dep_ != "pobj":
                        continue
                    place = s.entity(obj, PLACE_TYPES)
                    if place is not None:
                        confidence = 0.7 if word in _BE else 0.85
                        yield s.fact(person, "PERSON", "lives_in", place.text, "GPE", "residence", confidence)
                    elif word in _LIVE and obj.pos_ == "PROPN" and s.entity(obj, NOT_THINGS) is None:
                        # "I moved to Bergen": the small model often calls a city an ORG; after
                        # "live in" or "move to" a capitalized name is a place, if less surely.
                        other = s.entity(obj, {"ORG", "PERSON", "NORP", "PRODUCT"})
                        name = other.text if other is not None else obj.text
                        yield s.fact(person, "PERSON", "lives_in", name, "GPE", "residence", 0.6)
        if word in _WORK or word in _JOIN:
            objects = [c for c in tok.children if c.dep_ == "dobj"] if word in _JOIN else [
                o for p in tok.children if p.dep_ == "prep" and p.lower_ in ("at", "for") for o in p.children if o.dep_ == "pobj"
            ]
            for obj in objects:
                org = s.entity(obj, {"ORG"})
                if org is not None:
                    yield s.fact(person, "PERSON", "works_at", org.text, "ORG", "employer", 0.8)
        if word in _PREFER:
            for obj in tok.children:
                # What is preferred is a thing or a doing, not a pronoun ("prefer nothing after 16:00").
                if obj.dep_ in ("dobj", "xcomp", "ccomp") and obj.pos_ in ("NOUN", "PROPN", "VERB") \
                        and s.entity(obj, NOT_THINGS) is None:
                    phrase = _phrase_without_conjuncts(obj)
                    if 2 <= len(phrase) <= 80:
                        yield s.fact(person, "PERSON", "prefers", phrase, "CONCEPT", "preference", 0.75)
        for job in (c for c in tok.children if c.lower_ in JOB_NOUNS):  # "I accepted a job at X"
            for prep in (c for c in job.children if c.dep_ == "prep" and c.lower_ == "at"):
                for obj in (c for c in prep.children if c.dep_ == "pobj"):
                    org = s.entity(obj, {"ORG"})
                    if org is not None:
                        yield s.fact(person, "PERSON", "works_at", org.text, "ORG", "employer", 0.7)


def _entity_links(s: _Sentence) -> Iterable[Fact]:
    """Any verb with a named (or first-person) subject and a named object: low confidence."""
    for tok in s.sent:
        if tok.dep_ not in ("ROOT", "conj", "ccomp", "xcomp", "advcl", "relcl") or tok.lower_ in _BE:
            continue
        if tok.is_punct or not tok.is_alpha or any(c.dep_ == "neg" for c in tok.children):
            continue
        if tok.lemma_.lower() in LIGHT_VERBS or not happened_or_ongoing(tok):
            continue  # "hear about Max", "came across a sidewalk": no relation between the two
        subject = s.subject_of(tok)
        if subject is None:
            continue
        subj_ent = s.entity(subject, {"PERSON", "ORG", "GPE", "NORP"})
        subj_name = entity_name(subj_ent, s.known) if subj_ent is not None else s.person(subject)
        subj_type = subj_ent.label_ if subj_ent is not None else "PERSON"
        if not subj_name:
            continue
        targets = [(c, tok.lower_) for c in tok.children if c.dep_ in ("dobj", "attr")]
        if not targets:
            targets = [(o, f"{tok.lower_}_{p.lower_}") for p in tok.children if p.dep_ == "prep" for o in p.children
                       if o.dep_ == "pobj"]
        for obj, predicate in targets:
            obj_ent = s.entity(obj)
            if obj_ent is None or entity_name(obj_ent, s.known) is None or clean_name(obj_ent.text) == clean_name(subj_name):
                continue
            if predicate.split("_")[0] in _LIVE | _WORK | _JOIN | _PREFER:
                continue  # the specific rules above own these
            yield s.fact(subj_name, subj_type, predicate, obj_ent.text, obj_ent.label_, "entity_link", 0.4)


RULES = (_roles, _residence_and_work, actions, _entity_links)


def parse_utterances(items: Sequence[Utterance], nlp=None, batch_size: int = 32) -> list:
    """The docs ``extract`` reads, from the process's parse memo (``text.statements.parse``): a
    turn whose cleaned text its summary already parsed is not parsed again. Parsing the utterances
    of many sessions at once first makes one batch of what each session would parse alone."""
    nlp = nlp or load_nlp()
    disabled = [name for name in UNUSED_COMPONENTS if name in nlp.pipe_names]
    return parse([_CODE_BLOCK_RE.sub(" ", u.text) for u in items], nlp, batch_size, disabled)


def extract(items: Sequence[Utterance], batch_size: int = 32, nlp=None) -> Extraction:
    """Mentions and facts of every utterance; a rule that fails on a sentence is recorded, not raised.

    A one-word name seen only where it opens a sentence is dropped: "Startin" or "Lemme" are
    capitalized because they come first, "Rome" is capitalized mid-sentence too."""
    nlp = nlp or load_nlp()
    result = Extraction()
    known = frozenset(n for u in items for n in (u.speaker, u.addressee) if n)
    openers: list[tuple[str, str, int, datetime | None]] = []
    inner: set[str] = set()
    for utterance, doc in zip(items, parse_utterances(items, nlp, batch_size), strict=True):
        inner.update(t.text for t in doc if t.is_title and not t.is_sent_start)
        for ent in doc.ents:
            name = entity_name(ent, known) if ent.label_ in ENTITY_TYPES else None
            if name is None:
                continue
            mention = (name, "PERSON" if name in known else ent.label_, utterance.line, utterance.ts)
            single_opener = " " not in name and ent.start == ent.sent.start and name not in known
            (openers if single_opener else result.mentions).append(mention)
        for sent in doc.sents:
            s = _Sentence(sent, utterance, known)
            for rule in RULES:
                try:
                    result.facts.extend(f for f in rule(s) if f.object and f.subject)
                except Exception as exc:  # one odd parse must not lose the session's other facts
                    message = f"line {utterance.line}: {rule.__name__} failed ({type(exc).__name__}: {exc})"
                    log.warning(message)
                    result.failures.append(message)
    result.mentions += [m for m in openers if m[0] in inner]
    first_turn: dict[str, Utterance] = {}
    for u in items:  # a speaker is a person of the graph even if no one says their name
        if u.speaker:
            first_turn.setdefault(u.speaker, u)
    result.mentions += [(name, "PERSON", u.line, u.ts) for name, u in first_turn.items()]
    return result
