"""Which statements a later one replaced: supersession, decided once at write time.

Every statement of a tenant (``statements.py``) is split into sentences and read as a claim
(``claims.py``). A later claim supersedes an earlier one when
- both are about the same subject (``compare.same_subject``: known subjects must agree),
- they are about the same attribute: their attribute texts (values masked) embed close, with a
  key noun in common, one known subject, values of one recognized kind or a change cue in the
  later one as further evidence (and at least a shared noun, a known common subject, a value the
  later one repeats or a close embedding to anchor the pair at all),
- and the later one states a new value in a class both state (a new place, date, name or
  number; one class at a time unless a change cue says several changed together), or, stating
  no value the earlier did not, says in so many words that it changed ("no longer", "now").
The agent's own turns (advice, explanations, recipes) replace something only when they state a
new value and say it changed ("Noted: the standup is at 8:00 now"): advice is full of "instead".
A question, a condition ("if you need more"), an instruction ("open the ticket"), a claim that
adds a value ("also", "another") or says one holds ("still") supersedes nothing. Two things that
happened ("we went to the museum", "we went to the beach") are two events unless a verb says one
changed.
An open task of a note ("- [ ] Send Fiona the abstract") is replaced by a later note ticking off the
same words (``ticked_off``).
An undated line (a profile or reference document, kept by hand) is never compared with another
undated one, and is replaced only by a change that says so and names the value it replaces. A
change recalling a value said before the one it seems to replace ("now 22 Nov (was 15 Nov)")
replaces nothing. Statements come from people and notes, not from the pipeline's own documents
(``statements.py``).

Measured on hand-labelled records over the sample workspace and the LoCoMo dev conversations
(``bench/knowledge_updates/precision_labels.json``, ``memory-pipeline eval updates --precision``).

Each earlier statement records its first successor; a fact changed twice is a chain (21 Nov ->
28 Nov -> 5 Dec) that readers follow to the newest. The optional LLM endpoint may confirm each
candidate pair; when it fails the extractive decision stands, and each record says which path
decided it.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memory_pipeline.llm.client import LLMClient, LLMError
from memory_pipeline.text.statements import Statement
from memory_pipeline.timeline.claims import Claim, analyze, without_values
from memory_pipeline.timeline.compare import (
    added_values,
    changed_classes,
    replaces_alike,
    restated,
    same_subject,
    subject_match,
)
from memory_pipeline.timeline.tasks import ticked_off

log = logging.getLogger(__name__)

RULES_VERSION = 6
"""Bump when the rules below decide differently: it is part of the digest a tenant's records were
decided from (``consolidation.supersession``), so its next typed-memory run decides them all again."""

RESTATED = 0.75
"""A later claim with one new value and no change cue replaces an earlier one when their attribute
texts (values masked) embed this close, a shared key noun or one known subject counting
``NOUN_EVIDENCE`` / ``SUBJECT_EVIDENCE`` towards it."""
NOUN_EVIDENCE = 0.08
SUBJECT_EVIDENCE = 0.08
CUED_CHANGE = 0.45
"""With a change cue ("moved", "now", "instead") and a shared key noun: the similarity needed."""
CITED_CHANGE = 0.30
"""With a change cue and the old value named again ("from 21 November to 28 November")."""
UNVALUED_CHANGE = 0.50
"""Without a new value, the plain similarity a pair needs besides an ending cue and a shared noun."""
MIN_WORDS = 4
"""Shorter sentences ("Thanks, Jon!") state nothing to replace."""
MAX_TOKENS = 40
_BREAK_RE = re.compile(r"(?:^|\s+)[-*•]\s+|\n+")
_NUMBERED_RE = re.compile(r"(?:^|\s)(\d{1,3})[.)]\s+")
EXTRACTIVE, LLM = "extractive", "llm"

JUDGE_PROMPT = (
    "You maintain a long-term memory. For each numbered pair, say whether the LATER statement "
    "replaces the EARLIER one: the same attribute of the same subject now has a different value "
    "(moved, rescheduled, upgraded, corrected, switched, no longer true). Two different people, "
    "things or events are not a replacement; neither is an added value. Answer with a JSON list of "
    "true/false, one per pair, nothing else."
)


@dataclass(frozen=True)
class Supersession:
    old: Statement
    new: Statement
    score: float
    changed: tuple[str, ...]  # value classes that changed ("time", "place", ...); empty: stated
    cues: tuple[str, ...]
    attribute: str  # shared key nouns, for people reading the record
    decided_by: str = EXTRACTIVE
    old_sentence: str = ""  # the sentence of the old statement that changed
    new_sentence: str = ""  # the sentence of the new statement that changed it

    @property
    def changed_part(self) -> str | None:
        """The sentence that changed when the old statement says more than it, else None: a reader
        then labels and demotes a result for that sentence only, not for all a turn said."""
        whole, part = " ".join(self.old.text.split()), " ".join(self.old_sentence.split())
        return part if part and part != whole.lstrip("-*• ").strip() else None


@dataclass(frozen=True)
class _Sentence:
    statement: Statement
    claim: Claim


def lines(text: str) -> list[str]:
    """A text's lines and list items, their bullets left out. A turn's words come on one line, so
    a list is found inside it: a dash or a bullet, and a numbered item of a run counting from one
    ("1. Scene ... 2. The problem ..."), or one opening a line or following a sentence's end
    ("Several things. 1) We pushed ..."). A number ending a sentence ("on May 14. Ana runs it",
    "due November 20.") is in no run and stays in its sentence, a value of it."""
    cuts = [m.span() for m in _BREAK_RE.finditer(text)]
    run: list[re.Match] = []
    for m in [*_NUMBERED_RE.finditer(text), None]:
        n = int(m.group(1)) if m else 0
        if m and run and n == int(run[-1].group(1)) + 1:
            run.append(m)
            continue
        cuts += [r.span() for r in run if len(run) > 1 or _opens(text, r)]
        run = [m] if m and (n == 1 or _opens(text, m)) else []
    out, at = [], 0
    for start, end in sorted(cuts):
        if start >= at:
            out.append(text[at:start])
        at = max(at, end)
    return [*out, text[at:]]


def _opens(text: str, number: re.Match) -> bool:
    """Whether a number opens a line or follows a sentence's end: an item's number, not a value."""
    before = text[: number.start(1)].rstrip(" \t")
    return not before or before.endswith(("\n", ".", "!", "?", ":"))


def claims_of(statements: Sequence[Statement], nlp) -> list[_Sentence]:
    """Every sentence of every statement as a claim. Lines and bullets are parsed apart (the
    parser runs a summary's bullets together), and a sentence longer than ``MAX_TOKENS`` is no
    claim: a paragraph of several facts changes nothing in particular. A line said again by the
    same speaker ("Thanks!", a repeated plan) is read once: its claims depend on its parse and
    its speaker only."""
    parts = [(s, line) for s in statements for line in lines(s.text[:4000]) if line.strip()]
    out = []
    read: dict[tuple[str, str | None], list[Claim]] = {}
    for (statement, line), doc in zip(parts, nlp.pipe([p for _, p in parts], batch_size=64), strict=True):
        claims = read.get((line, statement.speaker))
        if claims is None:
            claims = read[(line, statement.speaker)] = [
                analyze(sent, statement.speaker) for sent in doc.sents if 3 <= len(sent) <= MAX_TOKENS
            ]
        out += [_Sentence(statement, claim) for claim in claims]
    return out


def _candidate(old: _Sentence, new: _Sentence, cosine: float, first_said: dict | None = None) -> Supersession | None:
    a, b = old.claim, new.claim
    if not b.asserts or b.additive_cue or (b.continuing and not b.change_cue) or not (a.has_values or b.change_cue):
        return None
    if old.statement.concurrent(new.statement):
        return None  # a note of the day and that day's conversation say the same thing at once
    if old.statement.undated and new.statement.undated:
        return None  # two profile or reference lines: neither is known to be the later
    if not b.change_cue and new.statement.by_agent:
        return None  # the agent's advice and explanations state no change of anyone's facts unless they say so
    one_file = old.statement.path == new.statement.path
    if one_file and not b.change_cue:
        return None  # within one conversation or note, a new value without "now"/"moved" is another thing
    # Whom each is about: its speaker, or for a line of a user's own notes, that user.
    old_who, new_who = old.statement.speaker or old.statement.subject, new.statement.speaker or new.statement.subject
    if not same_subject(a, b, old_who, new_who):
        return None
    # The person both are about is no topic they share: "Kim is trying to get around Tokyo" and
    # "Kim cleaned the litter box, actually" share only Kim. A thing named ("the Offsite") is one.
    who = {w.casefold() for w in (old_who, new_who) if w}
    shared = (a.nouns & b.nouns) - who
    topic = bool(shared) or a.subject.head in b.nouns - who or b.subject.head in a.nouns - who
    same = subject_match(a, b, old_who, new_who)
    changed = changed_classes(a, b)
    if changed:
        if not replaces_alike(a, b, changed):
            return None  # a date for a date, a city for a city: not a person for a product
        named_again = {v for k in changed for v in a.values[k] & b.values[k]}
        cited = bool(named_again)  # "from 21 November to 28 November"
        if cited and named_again <= a.qualifiers and not a.qualified & b.nouns:
            # The earlier one names the value only as the kind of something the later one does not
            # speak of: "meetings before 16:00 Lisbon time" is not where someone lives.
            return None
        if (one_file or old.statement.undated) and not (cited and b.change_cue):
            # In one conversation, a change names what it replaces ("previously 21 Nov"); so does
            # one replacing a profile line, whose date is unknown (kept current by hand, it may well
            # be newer than a conversation that only seems to differ from it).
            return None
        if cited and first_said and all(
            first_said.get((k, v), new.statement.order) < old.statement.order
            for k in changed for v in added_values(a, b, k)
        ):
            return None  # "now 22 Nov (was 15 Nov)" after "moved to 22 Nov": it recalls an older value
        if b.change_cue:
            # Said to be a change: about the same thing (a shared key noun, or one known subject
            # naming the old value again) and phrased alike enough.
            bar = CITED_CHANGE if cited else CUED_CHANGE
            if not (topic or (cited and same)) or cosine < bar:
                return None
        else:
            # Said as a plain fact: the same sentence but for one value, which replaced the old one.
            # Two things that happened ("we went to the museum", "we went to the beach") are two
            # events: without a word saying so, one does not undo the other.
            # "The LGBTQ community" and "the trans community" name two communities, not two values.
            if a.event or b.event or (a.qualified & b.qualified & shared) or len(changed) > 1 or cited or not topic or len(added_values(a, b, changed[0])) > 1 or cosine + NOUN_EVIDENCE + (SUBJECT_EVIDENCE if same else 0.0) < RESTATED:
                return None
    elif restated(a, b) or old.statement.undated or new.statement.by_agent or not (b.ending_cue and shared and cosine >= UNVALUED_CHANGE):
        # With no new value, only "no longer", "instead", "stopped", ... say it changed; in the
        # agent's advice ("build a plan instead") they weigh one way against another.
        return None
    attribute = " ".join(sorted(shared))[:120]
    return Supersession(old.statement, new.statement, round(float(cosine), 4), tuple(changed), b.cues, attribute,
                        old_sentence=a.sentence, new_sentence=b.sentence)


PAIR_ROWS = 512
"""Old claims whose pairs are gathered at once (bounds the memory of the pairs in flight)."""


def _topics(claim: Claim) -> set[str]:
    """A claim's key nouns and its subject's head: ``_candidate`` pairs two claims about a common
    topic (a key noun in both, or one's subject head among the other's nouns) or, when the later
    one says it changed, two naming an old value again (``_values``). Claims sharing neither never meet."""
    return set(claim.nouns) | ({claim.subject.head} if claim.subject.head else set())


def _values(claim: Claim) -> set[tuple[str, str]]:
    return {(k, v) for k, values in claim.values.items() for v in values}


class _KeyIndex:
    """Claims by key, as flat arrays: for a block of old claims, the later claims sharing a key
    with each of them, without building a pair for every two claims of the tenant."""

    def __init__(self, keys: Sequence[set]):
        self.ids: dict = {}
        ids = self.ids
        owner, key = [], []
        for n, claim_keys in enumerate(keys):
            for k in claim_keys:
                owner.append(n)
                key.append(ids.setdefault(k, len(ids)))
        owner_arr, key_arr = np.array(owner, dtype=np.int64), np.array(key, dtype=np.int64)
        # The keys of each claim (claim -> keys) and the claims of each key (key -> claims).
        self.claim_ptr = np.searchsorted(owner_arr, np.arange(len(keys) + 1))
        self.claim_keys = key_arr
        by_key = np.argsort(key_arr, kind="stable")
        self.post_items = owner_arr[by_key]
        self.post_ptr = np.searchsorted(key_arr[by_key], np.arange(len(ids) + 1))
        self.width = len(ids) + 1
        self.codes = np.sort(owner_arr * self.width + key_arr)  # (claim, key) as one sorted number

    def holds(self, claims: np.ndarray, keys: np.ndarray) -> np.ndarray:
        """Whether each claim has the key beside it."""
        code = claims * self.width + keys
        if not len(self.codes):
            return np.zeros(len(code), dtype=bool)
        return self.codes[np.minimum(np.searchsorted(self.codes, code), len(self.codes) - 1)] == code

    def pairs(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """(old, new) index arrays of the claims of ``lo:hi`` and every claim sharing a key with
        them; a pair sharing several keys is repeated (the caller deduplicates)."""
        entries = self.claim_keys[self.claim_ptr[lo]:self.claim_ptr[hi]]
        owners = np.repeat(np.arange(lo, hi), np.diff(self.claim_ptr[lo:hi + 1]))
        at, sizes = _ranges(self.post_ptr[entries], self.post_ptr[entries + 1])
        return np.repeat(owners, sizes), self.post_items[at]

    def keys_of(self, claims: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(position in ``claims``, key id) of every key of each of these claims."""
        at, sizes = _ranges(self.claim_ptr[claims], self.claim_ptr[claims + 1])
        return np.repeat(np.arange(len(claims)), sizes), self.claim_keys[at]


def _ranges(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The positions of ``starts[n]:ends[n]`` for every n, laid end to end, and each range's size."""
    sizes = ends - starts
    total = int(sizes.sum())
    offsets = np.repeat(starts - np.concatenate(([0], np.cumsum(sizes)[:-1])), sizes)
    return (offsets + np.arange(total)).astype(np.int64), sizes


def _state_new_values(values: _KeyIndex, klass: np.ndarray, classes: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """For each pair, whether the later claim states a value the earlier does not in a class the
    earlier states too: what a changed value class needs (``claims.changed_classes``)."""
    pair, value = values.keys_of(j)
    new = ((classes[i[pair]] >> klass[value]) & 1).astype(bool) & ~values.holds(i[pair], value)
    out = np.zeros(len(i), dtype=bool)
    out[pair[new]] = True
    return out


def _possible_pairs(sentences: Sequence[_Sentence], first_said: dict) -> list[tuple[int, int]]:
    """(old, new) index pairs, in row-major order, that ``_candidate`` accepts at some similarity.

    Every rule of ``_candidate`` but the similarity depends on the two claims alone, and a higher
    similarity never turns a pair down; so a pair it rejects with an infinite similarity is
    rejected whatever the vectors say, and neither claim needs a vector for it. Only claims that
    share a key (``_keys``) are paired at all, and the cheapest of the other necessary conditions
    are checked on those pairs at once, before the rules read the few that remain."""
    claims = [s.claim for s in sentences]
    statements = [s.statement for s in sentences]
    orders = [s.order for s in statements]
    rank = {o: r for r, o in enumerate(sorted(set(orders)))}

    def ids(values) -> np.ndarray:
        index: dict = {}
        return np.array([index.setdefault(v, len(index)) for v in values], dtype=np.int64)

    order = np.array([rank[o] for o in orders], dtype=np.int64)
    ref, path = ids(s.ref for s in statements), ids(s.path for s in statements)
    day = np.array([s.said_at.date().toordinal() for s in statements], dtype=np.int64)
    undated = np.array([s.undated for s in statements])
    by_day = np.array([s.by_day for s in statements])
    values = np.array([c.has_values for c in claims])
    change = np.array([c.change_cue for c in claims])
    ending = np.array([c.ending_cue for c in claims])
    new_ok = (values | change) & ~np.array(
        [c.additive_cue or (c.continuing and not c.change_cue) or not c.asserts for c in claims]
    )
    bits: dict[str, int] = {}
    classes = np.array([sum(1 << bits.setdefault(k, len(bits)) for k in c.values) for c in claims], dtype=np.int64)
    topics, named = _KeyIndex([_topics(c) for c in claims]), _KeyIndex([_values(c) for c in claims])
    klass = np.array([bits[k] for k, _ in named.ids], dtype=np.int64)
    n = len(claims)
    out = []
    # A block of old claims at a time: pairing every claim with every other took N x N bytes per
    # mask (30,000 claims of one big tenant: 0.9 GB each) and read every pair in Python.
    for lo in range(0, n, PAIR_ROWS):
        i, j = topics.pairs(lo, min(lo + PAIR_ROWS, n))
        vi, vj = named.pairs(lo, min(lo + PAIR_ROWS, n))
        keep = change[vj]  # without a common topic, only a said change naming the old value again
        i, j = np.concatenate((i, vi[keep])), np.concatenate((j, vj[keep]))
        keep = new_ok[j] & (order[i] < order[j])
        i, j = i[keep], j[keep]
        i, j = np.divmod(np.unique(i * n + j), n)  # once each, in row-major order
        ok = (
            (ref[i] != ref[j])
            & (values[i] | change[j])
            & ~(undated[i] & undated[j])
            & ~((path[i] == path[j]) & ~change[j])  # one file: only a said change
            & ~(~undated[i] & ~undated[j] & (by_day[i] | by_day[j]) & (day[i] == day[j]))
            # A class both state (a value changed) or, with none, an ending cue ("no longer").
            & (((classes[i] & classes[j]) != 0) | ending[j])
        )
        i, j = i[ok], j[ok]
        # A value changed when the later claim states one the earlier did not, in a class both state.
        ok = ending[j] | _state_new_values(named, klass, classes, i, j)
        out += [
            (int(a), int(b)) for a, b in zip(i[ok], j[ok], strict=True)
            if _candidate(sentences[a], sentences[b], float("inf"), first_said) is not None
        ]
    return out


def detect(statements: Sequence[Statement], nlp, embedder, llm: LLMClient | None = None) -> list[Supersession]:
    """Each superseded statement with its first successor, oldest first."""
    ticked = [Supersession(old, new, 1.0, (), ("done",), "task", old_sentence=old.text, new_sentence=new.text)
              for old, new in ticked_off(statements)]
    first: dict[str, Supersession] = {}
    for pair in sorted([*_changes(statements, nlp, embedder, llm), *ticked], key=lambda p: p.new.order):
        first.setdefault(pair.old.ref, pair)  # the earliest successor of each
    return sorted(first.values(), key=lambda p: p.old.order)


def _changes(statements: Sequence[Statement], nlp, embedder, llm: LLMClient | None) -> list[Supersession]:
    """Every pair of a statement and a later one that changed it (``_candidate``), those the LLM
    endpoint rejects left out."""
    # The people talking are addressed by name ("Thanks, Jon!", "Wow, Mel"): their names, and the
    # short forms of them, are no value.
    speakers = frozenset(s.speaker.casefold() for s in statements if s.speaker)
    sentences = [
        _Sentence(s.statement, without_values(s.claim, speakers, short_forms=True)) for s in claims_of(statements, nlp)
        if s.claim.asserts and s.claim.words >= MIN_WORDS
    ]
    if len(sentences) < 2:
        return []
    first_said: dict[tuple[str, str], tuple] = {}  # (class, value) -> when a statement first named it
    for s in sentences:
        for klass, values in s.claim.values.items():
            for value in values:
                key = (klass, value)
                if key not in first_said or s.statement.order < first_said[key]:
                    first_said[key] = s.statement.order
    # Only pairs that every rule but the similarity lets through are embedded and read: a few
    # dozen of a LoCoMo conversation's 1,500 claims (embedding all of them was most of the time).
    pairs = _possible_pairs(sentences, first_said)
    used = sorted({k for pair in pairs for k in pair})
    if not used:
        return []
    at = {k: n for n, k in enumerate(used)}
    vectors = np.asarray(embedder.embed([sentences[k].claim.masked for k in used]), dtype=np.float32)
    sims = vectors @ vectors.T
    # Only pairs whose similarity could reach the lowest bar are read.
    floor = CITED_CHANGE
    found: dict[tuple[str, str], Supersession] = {}
    for i, j in pairs:
        cosine = sims[at[i], at[j]]
        if cosine < floor:
            continue
        old, new = sentences[i], sentences[j]
        pair = _candidate(old, new, float(cosine), first_said)
        if pair is None:
            continue
        key = (old.statement.ref, new.statement.ref)
        if key not in found or pair.score > found[key].score:
            found[key] = pair
    pairs = sorted(found.values(), key=lambda p: (p.old.order, p.new.order))
    if llm is not None and pairs:
        pairs = _judged(llm, pairs)
    return pairs


def _judged(llm: LLMClient, pairs: list[Supersession]) -> list[Supersession]:
    """Pairs the endpoint confirms; on any failure, the extractive decisions unchanged."""
    from dataclasses import replace

    lines = [
        f"{n}. EARLIER ({p.old.said_at:%Y-%m-%d}): {p.old.text[:300]}\n   LATER ({p.new.said_at:%Y-%m-%d}): {p.new.text[:300]}"
        for n, p in enumerate(pairs, 1)
    ]
    try:
        answer = json.loads(llm.chat(JUDGE_PROMPT, "\n".join(lines), max_tokens=16 + 8 * len(pairs)))
        if not isinstance(answer, list) or len(answer) != len(pairs) or not all(isinstance(a, bool) for a in answer):
            raise LLMError("the answer is not one true/false per pair")
    except (LLMError, ValueError) as exc:
        log.warning("supersession judged extractively: %s", exc)
        return pairs
    return [replace(p, decided_by=LLM) for p, keep in zip(pairs, answer, strict=True) if keep]
