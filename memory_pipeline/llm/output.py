"""What the LLM endpoint writes is checked before any of it is stored.

An answer is text from outside: an endpoint that is compromised, misconfigured or steered by a
transcript ("ignore all previous instructions ...") could otherwise plant claims in memory that
``inject`` later serves to the agent as fact. ``rejection`` says why an answer must not be stored:

- markup: HTML or script tags, Markdown images or links, a chat template's special tokens: a
  summary is plain sentences, and markup is how a payload reaches a renderer;
- text addressed to a model rather than about the conversation: an instruction to ignore,
  disregard or override instructions, prompts or rules; a claim about what the model is ("you
  are now ..."); a role marker opening a line ("system:");
- sentences the transcript does not support. A sentence is grounded when at least
  ``MIN_SUPPORT`` of its content words (compared by their first ``STEM`` letters, so "decided"
  meets "decide") occur in the source, and every token holding a digit (a number, a code, a
  version, "hunter2") occurs in the source as written: a summary restates, it does not add.

The caller then stands the extractive path in and records which path wrote the output.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from memory_pipeline.text.scrub import scrub_secrets
from memory_pipeline.text.summarize import content_words, split_sentences

MIN_SUPPORT = 0.5
STEM = 5
MIN_CONTENT_WORDS = 2  # a shorter sentence ("Nothing else.") has too little to judge

# Words any summary of any conversation uses about the conversation itself.
_SUMMARY_WORDS = frozenset(
    """user assistant conversation session chat discussed discussion asked asks said says mentioned
    mentions talked told explained explains noted notes suggested suggests recommended recommends
    agreed agrees confirmed confirms shared shares provided provides wanted wants summary
    requested requests reported reports described describes""".split()
)
_MARKUP_RE = re.compile(
    r"<\s*/?\s*[A-Za-z][\w:-]*(?:\s[^<>]*)?/?\s*>"  # an HTML or XML tag
    r"|<\|[\w-]+\|>|\[/?INST\]"  # a chat template's special tokens
    r"|!?\[[^\]\n]*\]\((?:[a-z][\w+.-]*:|/)"  # a Markdown link or image
    r"|(?i:javascript|vbscript|data):[^\s]",
)
_ADDRESSED_RE = re.compile(
    r"(?i:\b(?:ignore|disregard|forget|override|bypass|skip)\b[^.!?\n]{0,40}?"
    r"\b(?:instructions?|prompts?|rules?|directions?|guidelines?|directives?|guardrails?)\b"
    r"|\b(?:system|developer|hidden)\s+(?:prompt|message|instructions?)\b"
    r"|\byou\s+(?:are|will)\s+now\b|\bact\s+as\s+(?:an?\s+)?(?:ai|assistant|model|chatbot)\b"
    r"|\bas\s+an?\s+(?:ai|language\s+model|llm)\b)"
    r"|(?im:^\s*(?:system|assistant|developer)\s*:)"
)
_DIGIT_TOKEN_RE = re.compile(r"[^\s,;:()\[\]{}\"'“”‘’]*\d[^\s,;:()\[\]{}\"'“”‘’]*")


def rejection(answer: str, source: str, known: Iterable[str] = ()) -> str | None:
    """Why ``answer`` must not be stored, or None when it may be.

    ``source`` is the text the answer restates (the transcript, the candidate lines); ``known``
    adds words the answer may use without the source saying them (the user's name).
    """
    return poisoned(answer) or ungrounded(answer, source, known)


def poisoned(answer: str) -> str | None:
    """Why ``answer`` is not text about a conversation (markup, words to a model), or None."""
    if (match := _MARKUP_RE.search(answer)) is not None:
        return f"it carries markup ({_excerpt(match.group(0))})"
    if (match := _ADDRESSED_RE.search(answer)) is not None:
        return f"it addresses a model ({_excerpt(match.group(0))})"
    return None


def ungrounded(answer: str, source: str, known: Iterable[str] = ()) -> str | None:
    """Why ``source`` does not support ``answer`` (which of its sentences), or None."""
    vocabulary = _stems(source) | _stems(" ".join(known)) | {_stem(w) for w in _SUMMARY_WORDS}
    tokens = {_bare(t) for t in _DIGIT_TOKEN_RE.findall(source)}
    sentences = split_sentences(answer)
    # The reasons name sentences by number, never quote them: an unsupported token may be a secret.
    for n, sentence in enumerate(sentences, 1):
        if any(_bare(t) and _bare(t) not in tokens for t in _DIGIT_TOKEN_RE.findall(sentence)):
            return f"sentence {n} holds a number or code that the source does not"
        words = content_words(sentence)
        if len(words) < MIN_CONTENT_WORDS:
            continue
        support = sum(_stem(w) in vocabulary for w in words) / len(words)
        if support < MIN_SUPPORT:
            return f"sentence {n} is not supported by the source ({support:.0%} of its words)"
    if not sentences:
        return "it holds no sentence"
    return None


def _stem(word: str) -> str:
    return word[:STEM]


def _stems(text: str) -> set[str]:
    return {_stem(w) for w in content_words(text)}


def _bare(token: str) -> str:
    """A digit token without the punctuation that ends a sentence or wraps a value."""
    return token.strip(".!?…'\"`").lower()


def _excerpt(text: str, limit: int = 60) -> str:
    """What matched, on one line, shortened and scrubbed: the reason reaches logs and metadata."""
    text = scrub_secrets(" ".join(text.split())).text
    return text if len(text) <= limit else text[: limit - 1] + "…"
