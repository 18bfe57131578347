"""English words by part of speech, for telling a password that is a plain word ("my password is
sunshine") from a word that describes the password ("my password is weak", "... is reset"); and
the shapes of words handed over as one: run together, or a quoted phrase.

The words come from the index of the lemmatizer tables the project's spaCy model ships (WordNet's
nouns, verbs, adjectives and adverbs), read from the model's files without loading spaCy: the
scrubber runs in processes that never parse. Read once per process, and only when a sentence
hands a plain word over as a password.
"""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from pathlib import Path

# spaCy's ids of the tables' part-of-speech names (its 64-bit MurmurHash of "adj" ... "verb", as
# ``spacy.strings.get_string_id`` gives them; a test holds them to it).
POS_IDS = {
    "adj": 12401032943472870168,
    "adv": 10054248821341768113,
    "noun": 16833663260455505849,
    "verb": 6360137228241296794,
}


def _tables_path() -> Path | None:
    from memory_pipeline.text.statements import SPACY_MODEL  # the module imports this package

    spec = importlib.util.find_spec(SPACY_MODEL)
    if spec is None or spec.origin is None:
        return None
    return next(Path(spec.origin).parent.glob("*/lemmatizer/lookups/lookups.bin"), None)


@lru_cache(maxsize=1)
def _read() -> dict:
    import srsly

    path = _tables_path()
    return srsly.msgpack_loads(path.read_bytes()) if path is not None else {}


@lru_cache(maxsize=1)
def _tables() -> tuple[dict[str, frozenset[str]], frozenset[str], tuple[tuple[str, str], ...]]:
    """The words of each part of speech (``adj``, ``adv``, ``noun``, ``verb``) in lower case, the
    irregular forms of verbs ("gone", "wedding") and the suffix rules of their regular forms
    ("-ing" -> "", "-ed" -> "e"); all empty where the model's tables cannot be read."""
    tables = _read()
    index = tables.get("lemma_index", {})
    verb = POS_IDS["verb"]
    return ({pos: frozenset(index.get(key, ())) for pos, key in POS_IDS.items()},
            frozenset(tables.get("lemma_exc", {}).get(verb, {})),
            tuple((old, new) for old, new in tables.get("lemma_rules", {}).get(verb, ())))


@lru_cache(maxsize=1)
def _any_form() -> tuple[frozenset[str], tuple[tuple[str, str], ...]]:
    """Every word of the index and every irregular form of any part of speech ("children",
    "better"), and the suffix rules of them all ("-ies" -> "y", "-est" -> "")."""
    tables = _read()
    index, exceptions, rules = (tables.get(key, {}) for key in ("lemma_index", "lemma_exc", "lemma_rules"))
    words = frozenset().union(*(index.get(key, ()) for key in POS_IDS.values()),
                              *(exceptions.get(key, {}) for key in POS_IDS.values()))
    return words, tuple({(old, new) for key in POS_IDS.values() for old, new in rules.get(key, ())})


def _by_rule(word: str, rules: tuple[tuple[str, str], ...], lemmas: frozenset[str]) -> bool:
    """Whether a suffix rule makes ``word`` a form of one of ``lemmas`` ("cities" -> "city")."""
    return any(word.endswith(old) and word[: len(word) - len(old)] + new in lemmas for old, new in rules)


def _known(word: str) -> bool:
    words, rules = _any_form()
    return word in words or _by_rule(word, rules, words)


def only_a_noun(word: str) -> bool:
    """Whether the index knows ``word`` as a noun and as nothing else: "sunshine", "dragon", not
    "weak", "reset" (a verb too), "meeting" (a verb's form), "there" or an unknown word."""
    index, irregular, rules = _tables()
    word = word.lower()
    if word not in index["noun"] or any(word in index[pos] for pos in ("adj", "adv", "verb")):
        return False
    return word not in irregular and not _by_rule(word, rules, index["verb"])


def _letters(word: str) -> bool:
    """4-15 ASCII letters: the shape of a plain password."""
    return 4 <= len(word) <= 15 and word.isascii() and word.isalpha()


def plain_noun(word: str) -> bool:
    """A word of 4-15 ASCII letters that the index knows only as a noun (``only_a_noun``): what a
    plain password handed over looks like."""
    return _letters(word) and only_a_noun(word)


# Word formation that describes: the endings of a participle or a quality ("hardcoded", "pwned",
# "guessable", "useless"), and the prefixes that make a known word a state ("unset", "autofilled").
_DESCRIBING_ENDINGS = ("ed", "able", "ible", "ing", "ly", "less", "ful", "ness")
_PREFIXES = ("un", "non", "mis", "auto", "re", "pre", "de", "en", "over", "under")


def made_up(word: str) -> bool:
    """A word of 4-15 lower-case ASCII letters that the index knows in no form and that English
    word formation does not make of known words: "qwerty", "letmein", "changeme", not "hardcoded",
    "unset", "plaintext" or "getpass" (two known words of three letters or more run together, as
    names and identifiers are), nor a word the index holds ("weak", "there") or a function word
    ("this", "yours")."""
    if not (_letters(word) and word.islower()) or len(set(word)) < 3:
        return False  # (a mask, "xxxx", is no word)
    if not _any_form()[0]:
        return False  # the model's tables cannot be read: every word would be unknown
    from memory_pipeline.text.summarize import STOPWORDS  # the module imports this package

    # (the index holds content words: "this", "yours", "whom" are none)
    if _known(word) or word in STOPWORDS or word.endswith(_DESCRIBING_ENDINGS):
        return False
    return not any(_known(word[cut:]) and (word[:cut] in _PREFIXES or cut >= 3 and _known(word[:cut]))
                   for cut in range(2, len(word) - 2))


def two_nouns(word: str) -> bool:
    """Two nouns run together in lower case, 8-15 letters, neither shorter than four, the first
    no adjective, the whole no word the index knows and no word a describing ending makes:
    "bananabread", "pancakehouse"; not "plaintext", "lowercase" (an adjective first) or "getpass"."""
    if not (_letters(word) and word.islower() and len(word) >= 8) or _known(word) or word.endswith(_DESCRIBING_ENDINGS):
        return False
    index = _tables()[0]
    return any(word[:cut] in index["noun"] and word[:cut] not in index["adj"] and word[cut:] in index["noun"]
               for cut in range(4, len(word) - 3))


def plain_word(word: str) -> bool:
    """What a plain password handed over looks like: a thing's name (``plain_noun``), two run
    together (``two_nouns``) or a made-up word (``made_up``)."""
    return plain_noun(word) or two_nouns(word) or made_up(word)


def quoted_words(value: str) -> bool:
    """Three to six words of letters and digits, none a function word: a passphrase, not a phrase
    about the password ("not set", "the same as before", "left blank")."""
    from memory_pipeline.text.summarize import STOPWORDS  # the module imports this package

    words = value.split()
    return 3 <= len(words) <= 6 and all(w.isascii() and w.isalnum() and w.lower() not in STOPWORDS for w in words)


RUN_TOGETHER_LETTERS = 14  # a lower-case password handed over in prose: longer than most words


def run_together(value: str) -> bool:
    """Words run together in lower case ("correcthorsebatterystaple"): handed over as a password,
    longer than the words that describe one ("incorrect", "autogenerated")."""
    return len(value) >= RUN_TOGETHER_LETTERS and value.isascii() and value.isalpha() and value.islower()
