"""Relations from what people did, liked and planned: subject-verb-object patterns whose object
is a noun, named or not.

"I opened a store" -> (Gina, opened, store); "I've joined a gym" -> (Gina, joined, gym); "I'm
starting a dance studio" -> (Jon, starting, dance studio); "I adopted a puppy" -> has_pet; "I
work as a banker" -> works_as, "I lost my job as a banker" -> worked_as; "I love contemporary
dance" -> likes; "I'm going to open", "I will open", "I want to open" -> plans_to_open. A deed is
past, perfect or under way (an opinion in the present, "I appreciate your help", says nothing);
negated, conditional and questioned clauses say nothing; light verbs (be, get, make, think, ...)
and vague objects (thing, lot, way) are left out, and so is a deed or plan whose object is one
bare common noun ("met kids", "chasing my dream", "working on a project"): without what the turn
says around it, it means nothing later; nor is meeting or noticing someone unnamed ("met amazing
people"). The subject is whoever the parse names: the speaker for
"I", a speaker called by name; what one says the other did ("you earned all the kudos", "you're
helping others") is praise or a paraphrase, and a person's deeds are taken from their own words.
A past wish ("I wanted to join the military") is no plan, nor a past liking ("I loved reading as
a kid") a present one; an object keeps what completes it when short ("love of nature",
"upside-down poses", "a place for people to dance") and what it was turned into ("my love of
dance into a business"); in a relative clause the noun it describes is what was done to ("the
vintage records I bought at the fair" -> bought vintage records).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from memory_pipeline.knowledge.names import clean_name
from memory_pipeline.text.salience import DATE_TYPES, NUMBER_TYPES

if TYPE_CHECKING:
    from memory_pipeline.knowledge.relations import Fact

NOT_THINGS = DATE_TYPES | NUMBER_TYPES  # when or how much, never what was done
JOB_NOUNS = frozenset({"job", "position", "role", "post", "internship"})
LIGHT_VERBS = frozenset(
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
_ENCOUNTERS = frozenset({"meet", "notice"})  # worth keeping only when whom is named
_PETS = frozenset("dog dogs puppy cat cats kitten pet pets turtle turtles hamster parrot rabbit bunny horse fish".split())


def _noun_phrase(tok, complement: bool = True) -> str:
    """A noun with its compounds and adjectives, without determiners or pronouns ("dance studio",
    "upside-down poses"; an owner named by a noun stays: "the veteran's hospital"), and with what
    completes it when short: an "of" phrase ("love of nature") or a clause ("a place for people to
    dance"); the head alone would say less."""
    words = [c for c in tok.children if c.dep_ in ("compound", "amod", "nummod", "nmod") and c.i < tok.i
             and c.pos_ != "PRON" and (not c.is_stop or _hyphenated(c))]
    start = min([tok.i, *(c.left_edge.i for c in words)])
    span = [t for t in tok.doc[start : tok.i + 1] if t.dep_ not in ("det", "poss", "case") and t.pos_ != "PRON"
            and not (t.is_stop and t.i < tok.i and not _hyphenated(t.head if t.dep_ == "advmod" else t))]
    text = "".join(t.text + (t.whitespace_ if t is not span[-1] else "") for t in span).strip()
    owner = next((c for c in tok.children if c.dep_ == "poss" and c.pos_ in ("NOUN", "PROPN")), None)
    if owner is not None:  # "the veteran's hospital", "Jon's routine": whose it is says which
        text = f"{owner.text}'s {text}"
    if not complement:
        return text
    for child in tok.children:
        of_noun = child.dep_ == "prep" and child.lower_ == "of" and any(
            o.dep_ == "pobj" and o.pos_ in ("NOUN", "PROPN") for o in child.children)
        if (of_noun or child.dep_ in ("relcl", "acl")) and child.i > tok.i:
            tail = tok.doc[child.left_edge.i : child.right_edge.i + 1]
            # Not when it leans on a pronoun ("the freedom it brings"); a reflexive one is fine.
            if len(tail) <= 8 and not any(t.pos_ == "PUNCT" or t.pos_ == "PRON" and "Reflex=Yes" not in str(t.morph) for t in tail):
                return f"{text} {tail.text}"
    return text


def _hyphenated(tok) -> bool:
    """A modifier written with a hyphen ("upside-down"): a word of the phrase, stop word or not."""
    return any(t.tag_ == "HYPH" for t in tok.subtree)


def _action_objects(verb) -> list[tuple[str, object]]:
    """(preposition or "", object) pairs of a verb whose object is a noun, named or not: its
    direct object and a job it names ("lost my job as a banker"), or else its first prepositional
    object ("competed in a festival"): later phrases are circumstances, not what was done."""
    direct = [c for c in verb.children if c.dep_ in ("dobj", "attr")]
    if not direct and verb.dep_ == "relcl" and verb.head.pos_ in ("NOUN", "PROPN") and not any(
            c.dep_ in ("advmod", "nsubj", "nsubjpass") and c.tag_.startswith("W") for c in verb.children):
        direct = [verb.head]  # "the records I bought at the fair": what was bought is the noun the clause describes
    out = [("", c) for c in direct if c.pos_ in ("NOUN", "PROPN")]
    # "as" on the verb says the job only after "work" or with a job as the object ("lost my job
    # as a banker"); elsewhere it says when or how ("loved reading as a kid").
    job_verb = verb.lemma_.lower() == "work" or any(d.lower_ in JOB_NOUNS for d in direct)
    for holder in [verb, *(d for d in direct if d.lower_ in JOB_NOUNS)] if job_verb else []:
        for prep in (c for c in holder.children if c.dep_ == "prep" and c.lower_ == "as"):
            out += [("as", o) for o in prep.children if o.dep_ == "pobj" and o.pos_ == "NOUN"]
    if not direct:
        prep = next((c for c in verb.children if c.dep_ == "prep" and c.lower_ != "as"), None)
        if prep is not None:
            out += [(prep.lower_, o) for o in prep.children if o.dep_ == "pobj" and o.pos_ in ("NOUN", "PROPN")][:1]
    return [(p, o) for p, o in out if o.lower_ not in _VAGUE_NOUNS and o.is_alpha and len(o) > 2]


def _result_phrase(verb, obj) -> str:
    """What a thing was turned into ("turning my love of dance into a business"): without it the
    deed is a fragment."""
    for prep in (c for c in verb.children if c.dep_ == "prep" and c.lower_ == "into" and c.i > obj.i):
        into = next((o for o in prep.children if o.dep_ == "pobj" and o.pos_ in ("NOUN", "PROPN")), None)
        if into is not None:
            return f" into {_noun_phrase(into, complement=False)}"
    return ""


def happened_or_ongoing(verb) -> bool:
    """A deed: past ("opened"), perfect ("have joined") or under way ("am starting")."""
    aux = {c.lower_ for c in verb.children if c.dep_ in ("aux", "auxpass")}
    if verb.tag_ == "VBD" and not aux:
        return True
    if verb.tag_ == "VBN" and aux & {"have", "'ve", "’ve", "has", "'s", "had", "'d"}:
        return True
    return verb.tag_ == "VBG" and bool(aux & {"am", "'m", "’m", "is", "'s", "are", "'re", "was", "were", "been"})


def _likes(s, who: str, verb) -> Iterable[Fact]:
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
        if len(words) == 1 and gerund.lemma_.lower() in LIGHT_VERBS:
            continue  # "I love doing": doing what is not said
        yield s.fact(who, "PERSON", "likes", " ".join(words[:6]), "CONCEPT", "preference", 0.6)


def actions(s) -> Iterable[Fact]:
    """A person doing something to a thing: (Jon, opened, dance studio), (Gina, has_pet, puppy)."""
    if s.sent.text.rstrip().endswith("?"):
        return
    for verb in s.sent:
        if verb.pos_ != "VERB" or any(c.dep_ == "neg" for c in verb.children) or any(
            c.dep_ == "mark" and c.lower_ in ("if", "unless", "whether") for t in (verb, *verb.ancestors) for c in t.children
        ):
            continue
        subject = s.subject_of(verb)
        if subject is not None and subject.lower_ in ("you", "yourself"):
            continue  # "You earned all the kudos", "you overcame those challenges": praise, not a deed told
        who = s.who(subject) if subject is not None else None
        if not who or any(c.dep_ == "aux" and c.tag_ == "MD" and c.lower_ not in ("will", "'ll", "shall") for c in verb.children):
            continue
        lemma = verb.lemma_.lower()
        head = verb.head if verb.dep_ == "xcomp" else None
        if head is not None and any(c.dep_ == "neg" for c in head.children):
            continue  # "I'm not gonna forget": the negation sits on the head
        if head is not None and head.lemma_.lower() in _PLAN_HEADS and head.tag_ == "VBD" and head.lemma_.lower() != "decide":
            continue  # "I wanted to capture their unity": a past wish, no plan (a decision stands)
        plan = head is not None and (head.lemma_.lower() in _PLAN_HEADS or head.lower_ in ("going", "gon") and any(
            c.dep_ == "aux" and c.lemma_ == "be" for c in head.children)) or any(
            c.lower_ in ("will", "'ll", "shall") for c in verb.children)
        particle = next((c.lower_ for c in verb.children if c.dep_ == "prt"), "")
        if lemma in _LIKING and not plan:
            if verb.tag_ != "VBD":  # "I loved reading as a kid": a liking that was, not one that is
                yield from _likes(s, who, verb)
            continue
        for prep, obj in _action_objects(verb):
            if s.entity(obj, NOT_THINGS) is not None:
                continue  # "worked on Monday", "moved in May": when, not what
            named = s.entity(obj)
            thing = clean_name(named.text) if named is not None else _noun_phrase(obj)
            if prep == "" and thing:
                thing += _result_phrase(verb, obj)
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
            elif lemma in LIGHT_VERBS:
                continue
            elif not plan and not happened_or_ongoing(verb):
                continue  # "I love creating art", "to lend an ear": an opinion or a wish, not a deed
            elif named is None and len(thing.split()) == 1 and obj.lower_ not in JOB_NOUNS:
                continue  # "met kids", "exploring options", "chasing my dream": a bare noun says too little
            elif named is None and lemma in _ENCOUNTERS:
                continue  # "met amazing people", "noticed a little girl": someone unnamed is nothing to recall
            else:
                said = verb.lower_ if verb.tag_ in ("VBD", "VBG", "VBN") and not plan else lemma
                said += f"_{particle}" if particle else ""  # "set up", "worked up"
                predicate = f"plans_to_{lemma}" + (f"_{particle}" if particle else "") if plan else said
                predicate += f"_{prep}" if prep else ""
            if predicate in ("works_as", "worked_as") and plan:
                continue
            yield s.fact(who, "PERSON", predicate, thing, "CONCEPT", "action", 0.6)
