"""Recall results: the candidates a search scored, deduplicated across scopes and turned into
cited results (a transcript window with its best neighbour and the answer to a question it ends on,
overlaps collapsed, cut at ``k``)."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from memory_pipeline.config import RecallConfig
from memory_pipeline.recall.index.bm25 import query_words
from memory_pipeline.recall.rows import _SPEAKER_RE as SPEAKER_PREFIX_RE  # format_turn's "Name (time): "
from memory_pipeline.recall.scope import Scope
from memory_pipeline.recall.sources import Rows
from memory_pipeline.recall.timeline import superseded_note


@dataclass
class SearchResult:
    """One recalled piece of memory, with where it comes from and why it ranked."""

    source: str
    path: str
    start_line: int
    end_line: int
    turn_ids: list[str]
    score: float
    parts: dict[str, float]
    snippet: str
    citation: str
    tenant: str
    ids: list[str] = field(default_factory=list)
    when: str | None = None  # when it was said or written ("2026-11-18 08:47 UTC", "2026-11-04"); None: undated
    superseded: dict | None = None  # {"by": citation, "at": day} when a later statement replaced it
    earlier: str | None = None  # when it was said ("undated"), when a newer answer to the same question ranks above it
    tier: str | None = None  # hot | warm | cool: how much it was used lately (activation/decay.py)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Candidate:
    scope: Scope
    rows: Rows
    row: int
    vector: float
    text: float
    relevance: float
    bonus: float
    decay: float
    around: dict[int, float] = field(default_factory=dict)  # adjacent row -> its base score
    weight: float = 1.0  # its source's place in the order (``RecallConfig.source_weights``)
    score: float = 0.0
    when: str | None = None  # when its row was said or written (``recall.timeline``)
    record: object = None  # the supersession record of a replaced statement it holds
    earlier: str | None = None  # when it was said ("undated"), if a newer answer to the same question ranks above
    cited_turns: list[str] | None = None  # the turn ids of the statement a derived row was read from
    kept_with: float = 0.0  # the newest answer to a question is kept as the best answer to it is

    @property
    def text_hash(self) -> str:
        return self.rows.text_hash[self.row]

    @property
    def kept_score(self) -> float:
        """The score the minimum is held to: before decay and the source's weight. Decay orders
        dated notes (the newer first) and the weight orders layers; neither hides a fact nothing has
        replaced, however old its note. The newest answer to the question a kept candidate answers
        is kept with it (``kept_with``): the change matching the question less well than the fact it
        changed is no reason to hide it."""
        ordered = self.decay * self.weight
        return max(self.score / ordered if ordered > 0 else self.score, self.kept_with)


def dedup_across_scopes(candidates: list[Candidate]) -> list[Candidate]:
    """Keep one copy of a text held by several scopes: the user's own copy wins."""
    best: dict[str, Candidate] = {}
    for cand in candidates:
        held = best.get(cand.text_hash)
        if held is None or (cand.scope.rank, -cand.score) < (held.scope.rank, -held.score):
            best[cand.text_hash] = cand
    keep = {id(c) for c in best.values()}
    # Copies within one scope (the same line in two files) are both kept: they cite different files.
    return [c for c in candidates if id(c) in keep or _same_scope_copy(c, best)]


def _same_scope_copy(cand: Candidate, best: dict[str, Candidate]) -> bool:
    held = best[cand.text_hash]
    return held.scope.rank == cand.scope.rank and held is not cand


def build_results(
    candidates: list[Candidate], config: RecallConfig, k: int, min_score: float, query: str = ""
) -> list[SearchResult]:
    """Cited results, best first; a long transcript turn shows only its part that holds the
    query's meaningful words (``query``, ``focus``), the rest one ``memory_get`` of the citation away."""
    stems = frozenset(query_words(query)) if query and config.focus_chars else frozenset()
    results: list[SearchResult] = []
    used: set[tuple[int, int]] = set()  # (id of the Rows, row) already shown
    for cand in candidates:
        if len(results) >= k:
            break
        if cand.kept_score < min_score:
            continue
        rows, i = cand.rows, cand.row
        if config.collapse_overlaps and (id(rows), i) in used:
            continue
        unit = [i]
        if rows.source[i] in config.context_sources and config.context_rows > 0:
            unit = _with_context(cand, config.context_rows, used, config.carry_answer)
        if config.collapse_overlaps:
            used.update((id(rows), j) for j in unit)
            # Windows that overlap the shown lines are covered too.
            path = rows.path[i]
            lo, hi = int(rows.start_line[min(unit)]), int(rows.end_line[max(unit)])
            for j in (rows.prev_row[min(unit)], rows.next_row[max(unit)]):
                if j >= 0 and rows.path[j] == path and rows.start_line[j] >= lo and rows.end_line[j] <= hi:
                    used.add((id(rows), int(j)))
        results.append(_result(cand, unit, config, stems))
    return results


def _with_context(cand: Candidate, count: int, used: set[tuple[int, int]], answer: bool) -> list[int]:
    """The row plus up to ``count`` adjacent rows of the same file, the more relevant first; with
    ``answer``, a unit that ends on a question also carries the next row, which answers it."""
    rows, i = cand.rows, cand.row
    unit = [i]
    for _ in range(count):
        options = [
            int(j) for j in (rows.prev_row[min(unit)], rows.next_row[max(unit)])
            if j >= 0 and (id(rows), int(j)) not in used
        ]
        if not options:
            break
        unit.append(max(options, key=lambda j: cand.around.get(j, 0.0)))
        unit.sort()
    after = int(rows.next_row[unit[-1]])
    if answer and after >= 0 and (id(rows), after) not in used and ends_on_question(rows.content(unit[-1])):
        unit.append(after)
    return unit


_QUESTION_END_RE = re.compile(r"\?\W*$")


def ends_on_question(text: str) -> bool:
    """Whether the last sentence of ``text`` asks something (a "?" followed by nothing but
    punctuation, spaces or emoji)."""
    return bool(_QUESTION_END_RE.search(text))


def _result(cand: Candidate, unit: list[int], config: RecallConfig, stems: frozenset[str]) -> SearchResult:
    rows = cand.rows
    first, last = min(unit), max(unit)
    start, end = int(rows.start_line[first]), int(rows.end_line[last])
    # Transcript turns are focused; a note's chunk is already cut to a section by chunking.
    text = "\n".join(
        focus(rows.text[j], stems, config.focus_chars) if stems and rows.source[j] == "sessions" else rows.text[j]
        for j in sorted(unit)
    )
    turn_ids: list[str] = list(cand.cited_turns or [])
    for j in sorted(unit):
        turn_ids += [t for t in rows.turn_ids[j] if t not in turn_ids]
    snippet = text if len(text) <= config.snippet_chars else text[: config.snippet_chars - 1] + "…"
    path = rows.path[cand.row]
    source = str(rows.source[cand.row])
    citation = path if path.startswith(("episodes/", "facts/")) else f"{path}#L{start}-L{end}"
    return SearchResult(
        source=source,
        path=path,
        start_line=start,
        end_line=end,
        turn_ids=turn_ids,
        # 0..1 as min_score is: the user boost and the signals rank above 1 (the order keeps
        # them, and ``parts`` shows them), the score a reader compares says "as relevant as can be".
        score=round(min(1.0, cand.score), 6),
        parts={
            "ranked": round(cand.score, 6),
            "vector": round(cand.vector, 6),
            "text": round(cand.text, 6),
            "decay": round(cand.decay, 6),
            "boost": cand.scope.boost,
            "weight": cand.weight,
            "context": round(cand.relevance, 6),
            "signals": round(cand.bonus, 6),
        },
        snippet=snippet,
        citation=citation,
        tenant=cand.scope.key,
        ids=[rows.ids[j] for j in sorted(unit)],
        when=cand.when,
        superseded=superseded_note(cand.record),
        earlier=cand.earlier,
    )


_SENTENCE_RE = re.compile(r"[^.!?\n]*(?:[.!?]+|\n+|$)")


def focus(text: str, stems: frozenset[str], limit: int) -> str:
    """The run of whole sentences of ``text``, at most ``limit`` characters, holding the most
    distinct query stems (the shortest such run, then the earliest), with "…" where text was
    left out.

    A text within ``limit``, or one that holds none of the stems, is returned as it is (up to
    the caller's own cut); a transcript turn keeps its ``Speaker (time): `` prefix.
    """
    if len(text) <= limit or not stems:
        return text
    prefix = m.group(0) if (m := SPEAKER_PREFIX_RE.match(text)) else ""
    body = text[len(prefix):]
    spans = [(m.start(), m.end()) for m in _SENTENCE_RE.finditer(body) if m.group(0).strip()]
    found = [frozenset(query_words(body[a:b])) & stems for a, b in spans]
    best, best_key = None, (0, 0)
    for lo in range(len(spans)):
        held: frozenset[str] = frozenset()
        for hi in range(lo, len(spans)):
            length = spans[hi][1] - spans[lo][0]
            if length > limit:
                break
            held |= found[hi]
            key = (len(held), -length)  # the most query words, then the shortest run
            if held and key > best_key:
                best, best_key = (lo, hi), key
    if best is None:
        return text
    a, b = spans[best[0]][0], spans[best[1]][1]
    part = body[a:b].strip()
    return prefix + ("…" if a > 0 else "") + part + ("…" if body[b:].strip() else "")
