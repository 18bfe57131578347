"""How much a sentence is worth remembering, read from its spaCy parse (no model, no phrase list).

Scored up: names, dates and numbers (what a reader needs later); a first-person statement with an
object ("Jon lost his job", "Gina opened a store"); plans and decisions (a modal "will", "going
to", a verb of deciding with a clause). Scored down: questions, greetings and interjections,
courtesies that carry nothing else ("That's all for today, thanks!", "Thanks, that helps a lot"),
compliments (a copula with an adjective about "you" or "that" and nothing else), orders to the
other person (a bare verb with no subject), negated wishes ("can't wait"), and sentences with no
noun, name or number at all. ``select`` keeps the best sentences that say different things:
maximal marginal relevance over their content lemmas, so a restatement is not kept twice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

NAME_TYPES = frozenset({"PERSON", "ORG", "GPE", "LOC", "FAC", "EVENT", "WORK_OF_ART", "PRODUCT", "NORP", "LANGUAGE"})
DATE_TYPES = frozenset({"DATE", "TIME"})
NUMBER_TYPES = frozenset({"CARDINAL", "QUANTITY", "MONEY", "PERCENT", "ORDINAL"})
_SUBJECTS = ("nsubj", "nsubjpass")
_OBJECTS = ("dobj", "attr", "pobj", "oprd", "dative")
_ACTIVITY_DEPS = ("xcomp", "dobj", "pcomp", "csubj")  # a verb as what is done: "like to swim", "love performing"
_LISTENER = frozenset({"you", "that", "this", "it", "they", "which", "yours"})
_DECIDING = frozenset({"decide", "plan", "choose", "intend", "agree", "promise", "schedule"})
# Words of courtesy (the small closed class that thanks and takes leave) and the words that place
# a leave-taking in the present ("for today", "for now"): a sentence made of these and at most one
# other noun says nothing a reader could look up later.
_COURTESY = frozenset({"thanks", "thank", "thx", "bye", "goodbye", "cheers"})
_NOW_WORDS = frozenset({"today", "tonight", "now", "day", "moment"})
MMR_LAMBDA = 0.7


@dataclass(frozen=True)
class Features:
    """What the parse says about a sentence (each a count or a flag)."""

    tokens: int
    content: int  # nouns and proper nouns other than the speakers' names
    names: int
    dates: int
    numbers: int
    first_person_object: bool
    past_event: bool
    plan: bool
    question: bool
    greeting: bool
    compliment: bool
    imperative: bool
    negated_wish: bool
    clause: bool  # a whole clause: a verb with its subject (or the speaker's dropped one)
    person_subject: bool  # its subject is a person: "I", "we", "you" or a speaker's name
    to_person: bool  # said to a person, not to an assistant (whose instructions are terse orders)
    dated_in_past: bool  # a date it names is when a past deed happened ("we renewed on 1 March")
    terms: frozenset[str]  # content lemmas, for near-duplicate detection
    activities: int = 0  # verbs that are what is done or liked: "love performing", "like to swim"

    @property
    def substance(self) -> bool:
        """Whether it names anything a reader could look up later: a thing, a name, a number, a date
        or an activity. "Yeah, I love to." and "I love how uncomplicated it is." name none."""
        return bool(self.content or self.names or self.numbers or self.dates or self.activities)


def _first_person(tok) -> bool:
    return tok.lower_ in ("i", "we")


def _objects(verb) -> list:
    found = [c for c in verb.children if c.dep_ in _OBJECTS]
    found += [o for p in verb.children if p.dep_ in ("prep", "agent") for o in p.children if o.dep_ == "pobj"]
    for x in verb.children:  # "I want to open a store": the object of the clause it governs
        if x.dep_ == "xcomp":
            found += _objects(x)
    return [o for o in found if o.pos_ in ("NOUN", "PROPN", "NUM")]


def after_opener(sent) -> int:
    """Where a sentence starts once the interjection that opens it is left out, with the names of
    those it calls and their commas ("Wow, Mel, that's awesome!", "Yeah, I painted it", "Hey
    Gina, started a class"): the document index of its first token kept. The sentence's own start
    when there is no such opener, when the rest would hold no verb or noun ("Wow, Caroline!"), and
    before a "no", which answers a question. A name called there is never the sentence's subject."""
    tokens = list(sent)
    at = 0
    while at < len(tokens) and tokens[at].pos_ == "INTJ" and tokens[at].lower_ not in ("no", "nope", "nah"):
        at += 1
    end = 0
    while at:
        names = at
        while names < len(tokens) and tokens[names].pos_ == "PROPN":
            names += 1
        if names >= len(tokens) or tokens[names].text != ",":
            break
        end = at = names + 1
    kept = any(t.pos_ in ("VERB", "AUX", "NOUN") for t in tokens[end:])
    return sent.start + (end if kept else 0)


def dropped_verb(sent):
    """The verb of a sentence that opens with it and leaves out "I" ("Lost my job yesterday"),
    or None. A past form, or "my"/"me" in its clause, tells it from an order to the other person
    ("Take care of yourself")."""
    opens = after_opener(sent)
    first = next((t for t in sent.doc[opens : sent.end] if not t.is_punct and t.pos_ != "INTJ"), None)
    if first is None or first.pos_ != "VERB" or any(
        c.dep_ in _SUBJECTS + ("expl", "csubj") and c.i >= opens for c in first.children
    ):
        return None
    return first if first.tag_ in ("VBD", "VBN") else None


def _past(verb) -> bool:
    """A verb in the past by its morphology: "renewed", "was promoted", "had moved"; no modal."""
    if any(c.tag_ == "MD" for c in verb.children):
        return False
    if verb.tag_ == "VBD":
        return True
    return verb.tag_ == "VBN" and any(c.dep_ in ("aux", "auxpass") and c.lemma_ in ("have", "be") for c in verb.children)


def dated_in_past(sent) -> bool:
    """Whether a date of the sentence is when a past-tense verb happened: the time of the deed
    ("we renewed on 1 March", "we met Tuesday"), not a target it names ("pushed to 5 December",
    "scheduled for Saturday"). Such a date lies before the sentence was said."""
    for ent in sent.ents:
        if ent.label_ not in DATE_TYPES:
            continue
        head = ent.root.head
        if ent.root.dep_ == "pobj" and head.dep_ == "prep" and head.lower_ in ("on", "in", "at", "during"):
            head = head.head
        elif ent.root.dep_ not in ("npadvmod", "tmod"):
            continue
        if head.pos_ in ("VERB", "AUX") and _past(head):
            return True
    return False


def features(sent, known: set[str], to_person: bool = True) -> Features:
    """The features of one parsed sentence; ``known`` are the speakers' names."""
    words = [t for t in sent if not t.is_punct and not t.is_space]
    root = sent.root
    ents = [e for e in sent.ents if not (e.text in known and e.root.dep_ not in _SUBJECTS + _OBJECTS)]
    subjects = [c for c in root.children if c.dep_ in _SUBJECTS]
    dropped = dropped_verb(sent)
    first_person = any(_first_person(s) for s in subjects) or dropped is not None
    verbs = [root] + [c for c in root.children if c.dep_ == "conj" and c.pos_ in ("VERB", "AUX")]
    if dropped is not None:
        verbs.append(dropped)
    has_object = any(_objects(v) for v in verbs)
    modal_future = any(t.lower_ in ("will", "'ll", "’ll", "shall", "gon") or (t.lower_ == "going" and any(
        c.dep_ == "xcomp" for c in t.children)) for t in sent)
    deciding = any(t.lemma_.lower() in _DECIDING and any(c.dep_ in ("xcomp", "ccomp", "dobj") for c in t.children)
                   for t in sent if t.pos_ == "VERB")
    text = sent.text.strip()
    first_word = words[0] if words else None
    question = text.endswith("?") or (
        first_word is not None and (first_word.tag_ in ("WP", "WRB", "WDT") or (
            first_word.dep_ == "aux" and first_word.head.i == root.i and subjects and first_word.i < subjects[0].i))
    )
    content = [t for t in words if t.pos_ in ("NOUN", "PROPN") and t.text not in known]
    greeting = root.pos_ == "INTJ" or (bool(words) and all(t.pos_ in ("INTJ", "PROPN", "PRON") for t in words))
    if any(t.lower_ in _COURTESY for t in words) and not any(e.label_ in NAME_TYPES | NUMBER_TYPES for e in ents):
        substance = [t for t in content if t.lower_ not in _COURTESY | _NOW_WORDS]
        greeting = greeting or len(substance) <= 1
    adjective_root = root.pos_ == "ADJ" or (
        root.lemma_ == "be" and any(c.dep_ == "acomp" for c in root.children) and not _objects(root)
    )
    compliment = adjective_root and (not subjects or all(s.lower_ in _LISTENER for s in subjects)) and len(content) <= 1
    imperative = (
        root.pos_ == "VERB" and root.tag_ == "VB" and not subjects and not first_person
        and not any(c.dep_ == "aux" and c.tag_ == "MD" for c in root.children)
    )
    negated_wish = any(c.dep_ == "neg" for c in root.children) and any(
        c.dep_ == "aux" and c.tag_ == "MD" for c in root.children) and not has_object
    return Features(
        tokens=len(words),
        content=len(content),
        names=len([e for e in ents if e.label_ in NAME_TYPES]),
        dates=len([e for e in ents if e.label_ in DATE_TYPES]),
        numbers=len([e for e in ents if e.label_ in NUMBER_TYPES]),
        first_person_object=first_person and has_object,
        past_event=first_person and root.tag_ == "VBD",
        plan=modal_future or deciding,
        question=question,
        greeting=greeting,
        compliment=compliment,
        imperative=imperative,
        negated_wish=negated_wish,
        clause=root.pos_ in ("VERB", "AUX") and (bool(subjects) or dropped is not None),
        person_subject=dropped is not None or any(
            s.lower_ in ("i", "we", "you") or s.text in known for s in subjects),
        to_person=to_person,
        dated_in_past=dated_in_past(sent),
        terms=frozenset(t.lemma_.lower() for t in words if t.pos_ in ("NOUN", "PROPN", "VERB", "ADJ", "NUM") and not t.is_stop),
        activities=sum(1 for t in words if t.tag_ in ("VB", "VBG") and t.dep_ in _ACTIVITY_DEPS),
    )


def salience(f: Features) -> float:
    """A score of at least 0: about 1 for a plain sentence, 4-6 for a dated first-person event."""
    score = 1.0 + 0.35 * min(f.content, 5) + 0.7 * min(f.names, 2) + 0.8 * min(f.dates, 1) + 0.4 * min(f.numbers, 2)
    score += 1.2 * f.first_person_object + 0.4 * f.past_event + 0.8 * f.plan
    orders = f.imperative and f.to_person
    for flag, factor in ((f.question, 0.3), (f.greeting, 0.1), (f.compliment, 0.3), (orders, 0.35), (f.negated_wish, 0.5)):
        if flag:
            score *= factor
    if not (f.content or f.names or f.numbers or f.dates):
        score *= 0.25  # "So happy for you!": nothing a reader could look up later
    if f.tokens < 4 and f.to_person:
        score *= 0.3
    elif f.tokens > 45:
        score *= 0.7
    return round(score, 4)


T = TypeVar("T")


def similarity(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def select(
    items: Sequence[T], score: Callable[[T], float], terms: Callable[[T], frozenset[str]], k: int,
    lam: float = MMR_LAMBDA, min_score: float = 0.0,
) -> list[T]:
    """Up to ``k`` items by maximal marginal relevance (score against overlap with those kept)."""
    pool = [i for i in items if score(i) > min_score]
    if not pool:
        return []
    top = max(score(i) for i in pool)
    chosen: list[T] = []
    while pool and len(chosen) < k:
        best = max(
            pool,
            key=lambda i: lam * score(i) / top - (1 - lam) * max((similarity(terms(i), terms(c)) for c in chosen), default=0.0),
        )
        if chosen and max(similarity(terms(best), terms(c)) for c in chosen) >= 0.6:
            pool.remove(best)  # a near-duplicate of a kept sentence
            continue
        chosen.append(best)
        pool.remove(best)
    return chosen
