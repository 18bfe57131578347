"""Auto-inject: the memories worth adding to an agent's prompt for one incoming message.

Trivial messages (fewer than ``inject_min_words`` meaningful words after stopwords, such as "ok
thanks!") inject nothing and cost no search. Otherwise recall runs, results scoring at least
``inject_min_score`` are added best first while they fit ``inject_token_budget`` tokens, counted
with the embedding model's own tokenizer, and the section is formatted for a system prompt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memory_pipeline.config import RecallConfig, Settings, get_settings
from memory_pipeline.embedding import Embedder
from memory_pipeline.recall.query import meaningful_words
from memory_pipeline.recall.search import SearchResult, _default_embedder, search
from memory_pipeline.store.base import LanceBase
from memory_pipeline.tenancy import GLOBAL_USER, Tenant

HEADER = "## Relevant memory"
FOOTER = "Cite a memory by its [path#lines] when you use it; when two disagree, the newer one holds."


@dataclass
class InjectResult:
    section: str  # the prompt section, "" when nothing is injected
    matched: int  # results at or above the inject threshold
    injected: int  # of those, how many fit the token budget
    top_score: float  # best score among all results (0 when none)
    tokens: int  # tokens the section's memory lines take
    skipped_reason: str | None = None  # why nothing was searched (trivial message)
    results: list[SearchResult] = field(default_factory=list)  # the injected results

    def to_dict(self) -> dict:
        return {
            "section": self.section, "matched": self.matched, "injected": self.injected,
            "top_score": self.top_score, "tokens": self.tokens, "skipped_reason": self.skipped_reason,
            "citations": [r.citation for r in self.results],
        }


# Scripts written without spaces between words: a run of Chinese characters (kanji) counts one
# word per two characters, a run of kana one per four (words are mostly 1-2 kanji long; kana
# spell particles, endings and longer loan words).
_HAN_RE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f]+")
_KANA_RE = re.compile(r"[\u3040-\u30ff]+")
_UNSPACED_RE = re.compile(f"{_HAN_RE.pattern}|{_KANA_RE.pattern}")
_ANY_WORD_RE = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")


def meaningful_word_count(message: str) -> int:
    """Meaningful words in any script: English words that are not stopwords, every word of other
    scripts (Arabic, Cyrillic, Hangul, accented Latin ...), and Chinese or Japanese text by its
    length. Emoji and punctuation are not words."""
    count = sum((len(run) + 1) // 2 for run in _HAN_RE.findall(message))
    count += sum((len(run) + 3) // 4 for run in _KANA_RE.findall(message))
    rest = _UNSPACED_RE.sub(" ", message)
    count += sum(1 for word in _ANY_WORD_RE.findall(rest) if not word.isascii())
    ascii_only = _ANY_WORD_RE.sub(lambda m: m.group(0) if m.group(0).isascii() else " ", rest)
    return count + len(meaningful_words(ascii_only))


def is_trivial(message: str, min_words: int = 3) -> bool:
    return meaningful_word_count(message or "") < min_words


def format_memory_line(result: SearchResult) -> str:
    """``- [citation] (2026-11-18 08:47 UTC) text``; a replaced memory says when and by what, and an
    older answer ranked below a newer one to the same question says ``[earlier]``."""
    snippet = " ".join(result.snippet.split())
    when = f" ({result.when})" if result.when else ""
    if result.superseded:
        what = f" \"{result.superseded['sentence']}\"" if result.superseded.get("sentence") else ""
        when += f" [superseded{what} {result.superseded['at']} by {result.superseded['by']}]"
    elif result.earlier:
        when += " [earlier]"
    return f"- [{result.citation}]{when} {snippet}"


def inject(
    message: str,
    agent: str,
    user: str | None = None,
    *,
    store: LanceBase | str | None = None,
    embedder: Embedder | None = None,
    settings: Settings | None = None,
    config: RecallConfig | None = None,
    token_budget: int | None = None,
    min_score: float | None = None,
) -> InjectResult:
    """The prompt section of memories for ``message``, with match and injection counts."""
    settings = settings or get_settings()
    config = config or settings.recall
    budget = config.inject_token_budget if token_budget is None else token_budget
    threshold = config.inject_min_score if min_score is None else min_score
    Tenant(agent, user or GLOBAL_USER)  # a crafted id is refused even when the message is trivial
    if is_trivial(message, config.inject_min_words):
        return InjectResult("", 0, 0, 0.0, 0, skipped_reason=f"fewer than {config.inject_min_words} meaningful words")
    embedder = embedder or _default_embedder(settings.embedder)
    results = search(
        message, agent, user, k=max(config.k, 10), min_score=threshold, store=store,
        embedder=embedder, settings=settings, config=config,
    )
    top = max((r.score for r in results), default=0.0)
    chosen: list[SearchResult] = []
    lines: list[str] = []
    used = 0
    for result in results:
        line = format_memory_line(result)
        cost = embedder.count_tokens(line)
        if used + cost > budget:
            continue  # a shorter, lower-ranked memory may still fit
        chosen.append(result)
        lines.append(line)
        used += cost
    section = "\n".join([HEADER, *lines, FOOTER]) if lines else ""
    return InjectResult(section, len(results), len(chosen), round(top, 6), used, None, chosen)
