"""Extractive episode summaries: sentence ranking, a one-sentence abstract and key topics.

No model is needed beyond spaCy's parse. Sentences are read as statements (``statements``: who
said them, rewritten in the third person), scored by their salience (``salience``: names, dates,
first-person events and plans up; questions, greetings, compliments down) raised for words
central to the session, and picked by maximal marginal relevance so the summary does not say one
thing twice; in a chat with an assistant, half of it is kept for what its people said. A talk
between named people opens with who talked and when. Key topics are proper-noun
phrases: runs of capitalized words, and identifiers such as ``LUM-48213`` or ``PG16``.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from memory_pipeline.text.salience import select
from memory_pipeline.text.statements import Statement, speaker_of, statements
from memory_pipeline.text.turns import Turn

ABSTRACT_CHARS = 200
SUMMARY_CHARS = 900
MAX_TOPICS = 8
MAX_SUMMARY_SENTENCES = 10
MIN_SALIENCE = 0.9

STOPWORDS = frozenset(
    """a about above after again against all also am an and any are aren't as at be because been
    before being below between both but by can can't could did didn't do does doesn't doing don't
    down during each few for from further had has have having he her here hers herself him himself
    his how i i'd i'll i'm i've if in into is isn't it it's its itself just let's me more most my
    myself no nor not now of off on once only or other our ours ourselves out over own same she
    should so some such than that that's the their theirs them themselves then there there's these
    they this those through to too under until up very was we we'll we're we've were what when where
    which while who whom why will with would you you'd you'll you're you've your yours yourself
    yes ok okay hi hello thanks thank please sure got get one two also really well yeah good great
    like know think going want need let us much many""".split()
)
_CALENDAR = frozenset(
    """monday tuesday wednesday thursday friday saturday sunday mon tue wed thu fri sat sun january
    february march april may june july august september october november december jan feb mar apr
    jun jul aug sep sept oct nov dec today tomorrow yesterday morning""".split()
)
_OPENERS = frozenset(
    "the a an hey hi dear our my your their its this that these those does did do is are was were "
    "if when then so but and or also meanwhile yes no ok okay noted done update re fyi".split()
)
_WORD_RE = re.compile(r"[A-Za-zÀ-ÿ][\w'’-]*")
_CODE_BLOCK_RE = re.compile(r"```.*?(```|$)", re.S)
_BULLET_RE = re.compile(r"^\s*(?:[-*•]|\d+[.)]|#+)\s+")
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])[\"”’)]?\s+(?=[\"“(]?[A-Z0-9])")
_CAP_WORD = r"(?:[A-ZÀ-Ý][\w’'-]*[\w]|[A-Z])"
_PHRASE_RE = re.compile(rf"{_CAP_WORD}(?:\s+(?:(?:of|de|da|do|du|van|von|la|le)\s+)?{_CAP_WORD})*(?:\s+\d+(?:\.\d+)?)?")
_IDENT_RE = re.compile(r"\b(?=[A-Za-z0-9_-]*[A-Z])(?=[A-Za-z0-9_-]*\d)[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)*\b")
_BRACKET_RE = re.compile(r"\[[^\]]{0,200}\]")
_POSSESSIVE_RE = re.compile(r"['’]s$")


@dataclass(frozen=True)
class Summary:
    summary: str
    l0_abstract: str
    key_topics: list[str]
    produced_by: str  # compaction | extractive | llm


def split_sentences(text: str) -> list[str]:
    """Sentences of a message: code blocks dropped, bullets and lines kept as sentences."""
    text = _BRACKET_RE.sub(" ", _CODE_BLOCK_RE.sub(" ", text))
    out: list[str] = []
    for line in text.splitlines():
        line = _BULLET_RE.sub("", line).strip()
        if not line:
            continue
        out.extend(s.strip() for s in _SENTENCE_END_RE.split(line) if s.strip())
    return out


def words(text: str) -> list[str]:
    return [w.lower().strip("'’-") for w in _WORD_RE.findall(text)]


def content_words(text: str) -> list[str]:
    return [w for w in words(text) if len(w) > 2 and w not in STOPWORDS]


def rank_statements(items: Sequence[Statement]) -> list[tuple[float, Statement]]:
    """Statements with a score, best first: salience, raised for words central to the session."""
    freq = Counter(w for s in items for w in set(content_words(s.said)))
    top = max(freq.values(), default=1)
    scored = []
    for s in items:
        cws = set(content_words(s.said))
        centrality = sum(freq[w] / top for w in cws) / math.sqrt(len(cws)) if cws else 0.0
        scored.append((s.salience * (1 + 0.5 * min(centrality, 2.0)), s))
    return sorted(scored, key=lambda pair: (-pair[0], pair[1].index))


def shorten(text: str, limit: int = ABSTRACT_CHARS) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0].rstrip(",;:-")
    return cut + "…"


def summary_length(statements: int) -> int:
    """How many statements a summary of a session of ``statements`` keeps at most."""
    return max(2, min(MAX_SUMMARY_SENTENCES, statements // 4 + 1))


def pick_summary(
    ranked: Sequence[tuple[float, Statement]], budget: int = SUMMARY_CHARS, limit: int | None = None
) -> list[Statement]:
    """The best statements that say different things and fit ``budget`` characters, at most
    ``limit`` (``summary_length``), in session order (maximal marginal relevance; a statement
    scoring under ``MIN_SALIENCE`` is never kept)."""
    score = {id(s): sc for sc, s in ranked}
    limit = summary_length(len(ranked)) if limit is None else limit
    if limit <= 0:
        return []
    picked = select([s for _, s in ranked], lambda s: score[id(s)], lambda s: s.features.terms, k=limit,
                    min_score=MIN_SALIENCE)
    chosen: list[Statement] = []
    used = 0
    for statement in picked:
        if used + len(statement.text) > budget and chosen:
            continue
        chosen.append(statement)
        used += len(statement.text) + 1
    return sorted(chosen, key=lambda s: s.index)


def best_abstract(ranked: Sequence[tuple[float, Statement]]) -> str:
    """The best-ranked statement of a readable length, shortened to about 200 characters."""
    for _, statement in ranked:
        if len(statement.text) >= 40:
            return shorten(statement.text)
    return shorten(ranked[0][1].text) if ranked else ""


def opening(turns: Sequence[Turn], user_name: str) -> str:
    """"Jon and Gina talked on 20 January 2023." for a talk between named people, else ""."""
    people = list(dict.fromkeys(s for s in (speaker_of(t.role, user_name) for t in turns) if s))
    stamps = [t.ts for t in turns if t.ts is not None]
    if len(people) < 2:
        return ""
    names = ", ".join(people[:-1]) + f" and {people[-1]}"
    when = f" on {stamps[0].day} {stamps[0]:%B %Y}" if stamps else ""
    return f"{names} talked{when}."


def key_topics(texts: Sequence[str], limit: int = MAX_TOPICS) -> list[str]:
    """Proper-noun phrases and identifiers, most frequent first.

    A single capitalized word that opens a sentence only counts if the same word also appears
    capitalized inside a sentence (so "Great" or "Done" never become topics).
    """
    all_text = "\n".join(texts)
    lowered_words = set(re.findall(r"(?<![A-Za-z])[a-z][\w'’-]*", all_text))
    sentences = [s for text in texts for s in split_sentences(text)]
    inner = {m.group(0).split()[0] for s in sentences for m in _PHRASE_RE.finditer(s) if m.start() > 0}
    counts: Counter = Counter()
    first_seen: dict[str, int] = {}
    for position, sentence in enumerate(sentences):
        found = [(m.start(), m.group(0)) for m in _PHRASE_RE.finditer(sentence)]
        found += [(m.start(), m.group(0)) for m in _IDENT_RE.finditer(sentence)]
        for start, phrase in found:
            phrase = _clean_phrase(phrase, at_start=start == 0, inner=inner, lowered=lowered_words)
            if phrase:
                counts[phrase] += 1
                first_seen.setdefault(phrase, position)
    # "Rui" inside "Rui Santos": the longer phrase stands for both.
    merged: Counter = Counter()
    for phrase, n in counts.items():
        longer = [p for p in counts if p != phrase and f" {phrase} " in f" {p} "]
        target = max(longer, key=lambda p: counts[p]) if longer else phrase
        merged[target] += n
        first_seen[target] = min(first_seen.get(target, 1 << 30), first_seen.get(phrase, 1 << 30))
    ranked = sorted(merged, key=lambda p: (-merged[p], first_seen[p]))
    return ranked[:limit]


def _clean_phrase(phrase: str, at_start: bool, inner: set[str], lowered: set[str]) -> str | None:
    """A proper-noun phrase without sentence openers ("Hey", "Ticket"), possessives and dates."""
    parts = phrase.split()
    single = len(parts) == 1
    while parts and parts[0].lower() in STOPWORDS | _OPENERS:
        parts, at_start = parts[1:], False
    if at_start and len(parts) > 1 and parts[0] not in inner:
        rest_is_id = any(ch.isdigit() for ch in " ".join(parts[1:]))
        if parts[0].lower() in lowered or rest_is_id:
            parts = parts[1:]  # a common word capitalized only because it opens the sentence
    while parts and (parts[-1].lower() in _CALENDAR or parts[-1].isdigit() and len(parts) > 1 and parts[-2].lower() in _CALENDAR):
        parts = parts[:-1]
    if not parts:
        return None
    parts[-1] = _POSSESSIVE_RE.sub("", parts[-1])
    phrase = " ".join(parts)
    if len(phrase) < 2 or phrase.lower() in STOPWORDS or phrase.lower() in _CALENDAR:
        return None
    if at_start and single and phrase not in inner:
        return None
    if phrase in {"I", "I'm", "I'll", "I've", "I'd"}:
        return None
    return phrase


def summarize_turns(
    turns: Sequence[Turn], compactions: Sequence[tuple[int, str, object]] = (), user_name: str = "user", nlp=None
) -> Summary:
    """The extractive summary of a session, in the third person; the last compaction summary stands
    in for the turns it covers, and only the turns after it are ranked."""
    texts = [t.content for t in turns] + [c[1] for c in compactions]
    topics = key_topics(texts)
    if compactions:
        line, text, _ = compactions[-1]
        later = [t for t in turns if t.line > line]
        ranked = rank_statements(statements(later, user_name, nlp, plural=True)) if later else []
        tail = pick_summary(ranked, budget=SUMMARY_CHARS // 2)
        summary = " ".join(text.split())
        if tail:
            summary += " Afterwards: " + " ".join(s.text for s in tail)
        first = split_sentences(text)
        return Summary(summary, shorten(first[0] if first else text), topics, "compaction")
    ranked = rank_statements(statements(turns, user_name, nlp, plural=True))
    limit = summary_length(len(ranked))
    chosen = []
    if _with_assistant(ranked):
        # Half of a chat's summary is what its people said: the user's own statements would
        # otherwise give way to the assistant's long answers (lists, explanations); the other
        # half goes to the best of the rest, where the assistant's outcomes (a ticket opened, a
        # limit raised) compete.
        chosen = pick_summary([pair for pair in ranked if pair[1].speaker is not None], SUMMARY_CHARS // 2,
                              (limit + 1) // 2)
    left = SUMMARY_CHARS - sum(len(s.text) + 1 for s in chosen)
    taken = {id(s) for s in chosen}
    rest = [pair for pair in ranked if id(pair[1]) not in taken and (not chosen or len(pair[1].text) < left)]
    if left > 0:
        chosen = sorted(chosen + pick_summary(rest, left, limit - len(chosen)), key=lambda s: s.index)
    summary = " ".join([opening(turns, user_name)] * 1 + [s.text for s in chosen]).strip()
    return Summary(summary, best_abstract(sorted(ranked, key=lambda pair: pair[1].speaker is None)), topics,
                   "extractive")


def _with_assistant(ranked: list[tuple[float, Statement]]) -> bool:
    """Whether a session's statements are both its people's and an assistant's (a speaker of None)."""
    return any(s.speaker is None for _, s in ranked) and any(s.speaker is not None for _, s in ranked)
