"""Wallet recovery phrases: twelve or more words in a row from one BIP-39 word list.

A recovery ("seed") phrase opens a wallet to whoever reads it, and it is only words, so no
pattern of characters finds it. The word lists come from the ``mnemonic`` package (the reference
implementation's own lists). Prose does not string twelve such words together: its short words
("the", "and", "is", "to") are in no list, and over the 17,808 turns of the development sets the
longest run of English-list words is nine. A phrase written as a numbered list ("1. abandon
2. ability ...") or with commas is still one run. Only the lists of languages that separate words
with spaces are read: in Chinese or Japanese text, twelve list characters in a row are ordinary
prose.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from mnemonic import Mnemonic

from memory_pipeline.text.secrets.families import placeholder

SEED_PHRASE = "seed_phrase"
MIN_WORDS = 12  # the shortest phrase BIP-39 defines
_LANGUAGES = ("english", "spanish", "french", "italian", "portuguese", "czech", "turkish", "russian")
_WORD = r"[^\W\d_]{3,10}"  # the lists' words are 3 to 10 letters long
# Between two words: spaces, commas or dashes, and perhaps the next word's number ("2." "3)").
_GAP = r"(?:[\s,;\-]+(?:\d{1,2}[.):]?[\s,;\-]+)?)"
_WORD_RE = re.compile(_WORD)


def _runs(word: str) -> re.Pattern[str]:
    """``MIN_WORDS`` or more of ``word`` in a row. Atomic groups: a word or a gap, once read, is
    not read again."""
    return re.compile(rf"\b(?>{word})(?>{_GAP}(?>{word})){{{MIN_WORDS - 1},}}\b")


# In ASCII text a letter is [a-zA-Z], faster to test than the Unicode class (1.0 s against 1.6 s
# over the dev sets' 15 MB).
RUN_RE, ASCII_RUN_RE = _runs(_WORD), _runs(r"[a-zA-Z]{3,10}")


def _plain(word: str) -> str:
    """Lower case without accents: "Ábaco" and "abaco" are the same word of the Spanish list."""
    decomposed = unicodedata.normalize("NFKD", word.lower())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


@functools.cache
def _languages_of() -> dict[str, int]:
    """Each word of the lists, accents dropped, with a bit per language whose list holds it."""
    words: dict[str, int] = {}
    for bit, language in enumerate(_LANGUAGES):
        for word in map(_plain, Mnemonic(language).wordlist):
            words[word] = words.get(word, 0) | 1 << bit
    return words


def _phrases(run: str) -> list[tuple[int, int]]:
    """[start, end) of each stretch of ``MIN_WORDS`` or more words of one list inside ``run``."""
    languages = _languages_of()
    found: list[tuple[int, int]] = []
    words = list(_WORD_RE.finditer(run))
    start, mask = 0, 0
    for i, word in enumerate([*words, None]):
        bits = languages.get(_plain(word.group(0)), 0) if word is not None else 0
        if mask & bits:
            mask &= bits
            continue
        if i - start >= MIN_WORDS:
            found.append((words[start].start(), words[i - 1].end()))
        # A stretch of one language ends here: the next starts at this word.
        start, mask = i, bits
    return found


def apply_seed_phrases(text: str, counts) -> str:
    """Every recovery phrase in ``text`` replaced by its placeholder, line breaks kept. Text whose
    accents are combining marks is read composed (NFC), and returned so only if it held one."""
    if text.isascii():
        return _redact(text, counts, ASCII_RUN_RE)
    if unicodedata.is_normalized("NFC", text):
        return _redact(text, counts)
    composed = unicodedata.normalize("NFC", text)
    redacted = _redact(composed, counts)
    return text if redacted == composed else redacted


def _redact(text: str, counts, runs: re.Pattern[str] = RUN_RE) -> str:
    pieces: list[str] = []
    done = 0
    for run in runs.finditer(text):
        for start, end in _phrases(run.group(0)):
            at, stop = run.start() + start, run.start() + end
            pieces += [text[done:at], placeholder(SEED_PHRASE, text[at:stop])]
            counts[SEED_PHRASE] += 1
            done = stop
    if not pieces:
        return text
    return "".join(pieces) + text[done:]
