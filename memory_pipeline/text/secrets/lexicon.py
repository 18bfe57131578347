"""English words by part of speech, for telling a password that is a plain word ("my password is
sunshine") from a word that describes the password ("my password is weak", "... is reset").

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
def _tables() -> tuple[dict[str, frozenset[str]], frozenset[str], tuple[tuple[str, str], ...]]:
    """The words of each part of speech (``adj``, ``adv``, ``noun``, ``verb``) in lower case, the
    irregular forms of verbs ("gone", "wedding") and the suffix rules of their regular forms
    ("-ing" -> "", "-ed" -> "e"); all empty where the model's tables cannot be read."""
    import srsly

    path = _tables_path()
    tables = srsly.msgpack_loads(path.read_bytes()) if path is not None else {}
    index = tables.get("lemma_index", {})
    verb = POS_IDS["verb"]
    return ({pos: frozenset(index.get(key, ())) for pos, key in POS_IDS.items()},
            frozenset(tables.get("lemma_exc", {}).get(verb, {})),
            tuple((old, new) for old, new in tables.get("lemma_rules", {}).get(verb, ())))


def only_a_noun(word: str) -> bool:
    """Whether the index knows ``word`` as a noun and as nothing else: "sunshine", "dragon", not
    "weak", "reset" (a verb too), "meeting" (a verb's form), "there" or an unknown word."""
    index, irregular, rules = _tables()
    word = word.lower()
    if word not in index["noun"] or any(word in index[pos] for pos in ("adj", "adv", "verb")):
        return False
    return word not in irregular and not any(
        word.endswith(old) and word[: len(word) - len(old)] + new in index["verb"] for old, new in rules)


def plain_noun(word: str) -> bool:
    """A word of 4-15 ASCII letters that the index knows only as a noun (``only_a_noun``): what a
    plain password handed over looks like."""
    return 4 <= len(word) <= 15 and word.isascii() and word.isalpha() and only_a_noun(word)
