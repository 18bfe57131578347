"""Hybrid recall over a tenant's memory: ``search(query, agent, user)`` (DESIGN §6).

One query is embedded once, then every requested source is searched in every scope the
(agent, user) may read (``scope.py``): cosine similarity over the tenant's in-memory vectors and
BM25 over the tenant's own in-memory full-text index (``bm25.py``). Scores are fused, decayed, boosted,
deduplicated across scopes, optionally re-ranked by MMR, and cut at ``min_score`` and ``k``.

A transcript window is judged with its neighbours: its score mixes in the best adjacent window's
(``context_weight``), and the result carries that neighbour too (``context_rows``), so the reader
gets the turn that answers and the turn it answers; a result that ends on a question also carries
the next turn, its answer (``carry_answer``).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from datetime import UTC, date, datetime
from functools import lru_cache

import numpy as np

from memory_pipeline.activation.ranking import activation_of, mark_tiers, order_key
from memory_pipeline.config import RecallConfig, Settings, get_settings
from memory_pipeline.embedding import Embedder, make_embedder
from memory_pipeline.recall import answers, scoring, timeline
from memory_pipeline.recall.query import TIME_WORDS_RE, QueryInfo, understand
from memory_pipeline.recall.results import Candidate, SearchResult, build_results, dedup_across_scopes
from memory_pipeline.recall.registry import known_sources
from memory_pipeline.recall.scope import Scope, recall_scopes
from memory_pipeline.recall.sources import (
    RecallSource,
    Rows,
    TenantCache,
    tenant_cache,
)
from memory_pipeline.store.base import LanceBase
from memory_pipeline.store.tables import CHUNKS


class RecallError(RuntimeError):
    """Recall cannot run; the message says what to do."""


class NoIndexError(RecallError):
    pass


class UnknownSourceError(RecallError, ValueError):
    """A source name recall does not know; the message lists the known ones."""


@lru_cache(maxsize=2)
def _default_embedder(kind: str) -> Embedder:
    return make_embedder(kind)


def _uri(store: LanceBase | str | None, settings: Settings) -> str:
    if store is None:
        return settings.lancedb_uri
    return store if isinstance(store, str) else store.uri


def search(
    query: str,
    agent: str,
    user: str | None = None,
    *,
    sources: Sequence[str | RecallSource] | None = None,
    k: int | None = None,
    min_score: float | None = None,
    mmr: bool | None = None,
    now: date | datetime | None = None,
    store: LanceBase | str | None = None,
    embedder: Embedder | None = None,
    settings: Settings | None = None,
    config: RecallConfig | None = None,
) -> list[SearchResult]:
    """The best memories of (agent, user) for ``query``, best first.

    ``user=None`` searches the agent-wide memory only. ``sources`` (names of registered sources,
    or ``RecallSource`` objects) defaults to every registered source whose table exists
    (``memory``, ``sessions``, ``episodes``, and ``facts``, which the typed memories declare:
    ``registry.known_sources``). ``k``,
    ``min_score`` and ``mmr`` override the configured defaults (``Settings.recall``); ``now``
    (default today, UTC) is the day dated notes' age is counted to.
    """
    settings = settings or get_settings()
    config = config or settings.recall
    k = config.k if k is None else k
    min_score = config.min_score if min_score is None else min_score
    use_mmr = config.mmr if mmr is None else mmr
    today = _as_date(now)
    scopes = recall_scopes(agent, user, settings, config)
    if not query or not query.strip():
        return []
    cache = tenant_cache(_uri(store, settings))
    with cache.pinned():  # one state of the database for the whole query
        return _search(query, sources, k, min_score, use_mmr, today, scopes, cache, embedder, settings, config)


def _search(query, sources, k, min_score, use_mmr, today, scopes, cache, embedder, settings, config):
    chosen = _resolve_sources(sources, cache)
    embedder = embedder or _default_embedder(settings.embedder)
    info = understand(query.strip(), today, config.request_frame)
    primary = [s for s in scopes if not s.fallback]
    fallback = [s for s in scopes if s.fallback]
    qvec = embed_query(embedder, info.topic, config.query_threads)
    # After the embedding, not beside it: on two cores the two compete for memory bandwidth and
    # the GIL, and a 1M-row tenant's p95 was 57 ms side by side against 45 ms one after the other.
    text = _text_hits(chosen, primary, cache, _fts_query(info), config)
    results = _search_scopes(info, qvec, primary, chosen, cache, config, today, k, min_score, use_mmr, text)
    if not results and fallback:
        text = _text_hits(chosen, fallback, cache, _fts_query(info), config)
        results = _search_scopes(info, qvec, fallback, chosen, cache, config, today, k, min_score, use_mmr, text)
    return results


_THREADS_LOCK = threading.Lock()


def embed_query(embedder: Embedder, text: str, threads: int) -> np.ndarray:
    """One query's vector. A torch model runs it on ``threads`` threads: a dozen tokens gain
    little from more, and resizing the thread pool for two threads cost more than it saved.
    The model is asked for only once torch is loaded: asking loads it (``MiniLMEmbedder``)."""
    one = getattr(embedder, "embed_query", None)
    if not threads or "torch" not in sys.modules or getattr(embedder, "model", None) is None:
        return (one(text) if one else embedder.embed([text])[0]).astype(np.float32)
    torch = sys.modules["torch"]
    with _THREADS_LOCK:
        before = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            return (one(text) if one else embedder.embed([text])[0]).astype(np.float32)
        finally:
            torch.set_num_threads(before)


def _text_hits(
    chosen: dict[RecallSource, list[str]], scopes: list[Scope], cache: TenantCache, query: str,
    config: RecallConfig,
) -> dict[RecallSource, tuple[dict[tuple[str, str], float], float]]:
    """Each source's BM25 hits {(tenant, id): score} and the query's full match (``TextIndex.full_match``)."""
    tenants = [s.key for s in scopes]
    return {
        source: (cache.text_hits(source, tenants, names, query, config.candidates),
                 cache.text_full_match(source, tenants, query, config.text_full_words)
                 if config.text_full_share > 0 else 0.0)
        for source, names in chosen.items()
    }


def _as_date(now: date | datetime | None) -> date:
    if now is None:
        return datetime.now(UTC).date()
    return now.date() if isinstance(now, datetime) else now


def _resolve_sources(
    sources: Sequence[str | RecallSource] | None, cache: TenantCache
) -> dict[RecallSource, list[str]]:
    registry = known_sources()
    requested = list(registry) if sources is None else list(dict.fromkeys(sources))
    unknown = [n for n in requested if not isinstance(n, RecallSource) and n not in registry]
    if unknown:
        raise UnknownSourceError(
            f"unknown source(s) {', '.join(map(repr, unknown))}: choose from {', '.join(sorted(registry))}"
        )
    tables = cache.table_names()
    chosen: dict[RecallSource, list[str]] = {}
    for item in requested:
        source, names = (item, list(item.names)) if isinstance(item, RecallSource) else (registry[item], [item])
        if source.table in tables:
            chosen.setdefault(source, []).extend(names)
    if not chosen:
        if CHUNKS.name not in tables:
            raise NoIndexError(
                f"no memory index in {cache.uri} yet: run `memory-pipeline ingest` first "
                "(or set MEMORY_PIPELINE_LANCEDB_URI to the database that holds it)"
            )
    return chosen


def _fts_query(info: QueryInfo) -> str:
    words = info.words or tuple(w.lower() for w in info.text.split())
    return " ".join(w.replace("'", " ") for w in words)


def _search_scopes(
    info: QueryInfo,
    qvec: np.ndarray,
    scopes: list[Scope],
    chosen: dict[RecallSource, list[str]],
    cache: TenantCache,
    config: RecallConfig,
    today: date,
    k: int,
    min_score: float,
    use_mmr: bool,
    text: dict[RecallSource, tuple[dict[tuple[str, str], float], float]],
) -> list[SearchResult]:
    candidates: list[Candidate] = []
    for source, names in chosen.items():
        text_raw, full_match = text[source]
        candidates += _source_candidates(source, names, info, qvec, text_raw, full_match, scopes, cache, config, today)
    candidates = dedup_across_scopes(candidates)
    # Activation breaks near-ties only: a lift of at most 2 % on the order, never on the score.
    known = activation_of(cache, (s.key for s in scopes))
    candidates.sort(key=order_key(known))
    pool = max(k * 5, 20)
    timeline.annotate(candidates[:pool], cache)
    if not timeline.about_past(info.text, info.period):
        candidates = timeline.newest_first(candidates, qvec, cache, chosen, pool)
        candidates = timeline.current_first(candidates, info)
    candidates = answers.number_first(candidates, info)
    candidates = answers.ordinal_first(candidates, info)
    timeline.cite_statements(candidates[:pool], cache, known_sources().get("sessions"))
    if use_mmr and candidates:
        top = candidates[:pool]
        vectors = np.stack([c.rows.vectors[c.row] for c in top])
        candidates = [top[i] for i in scoring.mmr_order([c.score for c in top], vectors, len(top), config.mmr_lambda)]
    return mark_tiers(build_results(candidates, config, k, min_score, " ".join(info.words)), known)


def _source_candidates(
    source: RecallSource,
    names: list[str],
    info: QueryInfo,
    qvec: np.ndarray,
    text_raw: dict[tuple[str, str], float],
    full_match: float,
    scopes: list[Scope],
    cache: TenantCache,
    config: RecallConfig,
    today: date,
) -> list[Candidate]:
    by_scope: list[tuple[Scope, Rows]] = []
    for scope in scopes:
        rows = cache.rows(source, scope.key)
        if rows is not None and len(rows):
            if rows.vectors.shape[1] != qvec.shape[0]:
                raise RecallError(
                    f"the index holds {rows.vectors.shape[1]}-dimensional vectors but the query "
                    f"embedder makes {qvec.shape[0]}: search with the embedder the index was built "
                    "with (MEMORY_PIPELINE_EMBEDDER), or re-ingest every tenant"
                )
            by_scope.append((scope, rows))
    if not by_scope:
        return []
    limit = config.candidates
    text_norm: dict[tuple[str, str], float] = {}
    if text_raw:
        keys = list(text_raw)
        normed = scoring.normalize_bm25(np.array([text_raw[key] for key in keys]), config.text_norm, full_match,
                                        config.text_full_share)
        text_norm = dict(zip(keys, normed.tolist()))
    text_hits = bool(text_norm)

    out: list[Candidate] = []
    for scope, rows in by_scope:
        allowed = rows.source_mask(tuple(names)) if len(names) < len(source.names) else None
        picked = set(_vector_top(rows, qvec, allowed, limit, config))
        text_of: dict[int, float] = {}
        for (tenant, row_id), value in text_norm.items():
            if tenant == scope.key and row_id in rows.position:
                text_of[rows.position[row_id]] = value
        picked.update(text_of)
        if not picked:
            continue
        # Only the picked rows and their neighbours are scored: a large tenant is never scanned
        # twice, and the approximate index never has to be exact.
        needed = set(picked)
        for i in picked:
            needed.update(int(j) for j in (rows.prev_row[i], rows.next_row[i]) if j >= 0)
        order = np.fromiter(needed, dtype=np.int64, count=len(needed))
        vector_unit = dict(zip(order.tolist(), scoring.cosine_to_unit(rows.vectors[order] @ qvec).tolist()))
        vector_hits = any(vector_unit[i] > 0 for i in picked)
        fused = scoring.hybrid(
            np.array([vector_unit[i] for i in order.tolist()]),
            np.array([text_of.get(i, 0.0) for i in order.tolist()]),
            vector_weight=config.vector_weight,
            text_weight=config.text_weight,
            vector_hits=vector_hits,
            text_hits=text_hits,
        )
        base = dict(zip(order.tolist(), fused.tolist()))

        instant = datetime.now(UTC)
        for i in picked:
            if rows.expired(i, instant):
                continue
            relevance = float(base[i])
            around: dict[int, float] = {}
            if rows.source[i] in config.context_sources:
                around = {int(j): float(base[j]) for j in (rows.prev_row[i], rows.next_row[i]) if j >= 0}
                if around and config.context_weight > 0:
                    best = max(around.values())
                    relevance = (relevance + config.context_weight * best) / (1 + config.context_weight)
            bonus = _signals(info, rows, i, config)
            decay = scoring.decay_factor(rows.day[i], today, config.half_life_days)
            cand = Candidate(
                scope=scope, rows=rows, row=i, vector=vector_unit[i],
                text=text_of.get(i, 0.0), relevance=relevance, bonus=bonus, decay=decay, around=around,
                weight=config.source_weights.get(str(rows.source[i]), 1.0),
            )
            cand.score = (relevance + bonus) * decay * cand.weight * scope.boost
            out.append(cand)
    return out


def _vector_top(
    rows: Rows, qvec: np.ndarray, allowed: np.ndarray | None, limit: int, config: RecallConfig
) -> list[int]:
    """The ``limit`` rows nearest the query: an exact scan, or the IVF index for big tenants."""
    if config.ann_min_rows and len(rows) >= config.ann_min_rows:
        want = limit if allowed is None else limit * 4
        ids, scores = rows.ann_index(config.ann_lists).search(qvec, want, config.ann_nprobe)
        ranked = ids[np.argsort(-scores)].tolist()
        return [i for i in ranked if allowed is None or allowed[i]][:limit]
    cos = rows.vectors @ qvec
    if allowed is not None:
        cos = np.where(allowed, cos, -np.inf)
    n = min(limit, int(np.isfinite(cos).sum()))
    if n <= 0:
        return []
    top = np.argpartition(-cos, n - 1)[:n] if n < len(cos) else np.arange(len(cos))
    return [int(i) for i in top if np.isfinite(cos[i])]


def _signals(info: QueryInfo, rows: Rows, i: int, config: RecallConfig) -> float:
    """Additive evidence from what the query asks: who, when, and which period."""
    bonus = 0.0
    if info.people and config.speaker_boost and rows.source[i] == "sessions":
        speakers = rows.speakers(i)
        if speakers:
            named = {p.lower() for p in info.people}
            share = sum(1 for s in speakers if s.lower() in named) / len(speakers)
            bonus += config.speaker_boost * share
    if info.asks_role and config.role_boost and rows.source[i] == "sessions":
        speakers = rows.speakers(i)
        if speakers:
            share = sum(1 for s in speakers if s.lower() == info.asks_role) / len(speakers)
            bonus += config.role_boost * share
    if info.asks_when and config.time_boost and TIME_WORDS_RE.search(rows.content(i)):
        bonus += config.time_boost
    if info.period is not None and config.date_boost:
        when = rows.day[i] or (rows.when[i].date() if rows.when[i] is not None else None)
        if info.period.contains(when):
            bonus += config.date_boost
    return bonus
