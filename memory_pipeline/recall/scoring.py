"""The arithmetic of recall, as pure functions over plain arrays (DESIGN §6).

Hybrid score = vector_weight x cosine (clamped to 0..1) + text_weight x BM25 normalized to 0..1;
when one channel has no hit, the other's score stands alone. BM25 is normalized over the query's
hits (the best 1), then held to the query's full match: a best hit below ``full_share`` of what a
row holding every query word scores counts for its share, so the best of what a deletion left
(an unrelated row sharing one common word) is not a full match. Dated notes decay with a half-life,
the user's own memory is boosted, and MMR can trade relevance for variety.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import date

import numpy as np


def cosine_to_unit(cosines: np.ndarray) -> np.ndarray:
    """Cosine similarity as a 0..1 relevance: negative similarity is no evidence at all."""
    return np.clip(np.asarray(cosines, dtype=np.float64), 0.0, 1.0)


def normalize_bm25(scores: np.ndarray, how: str = "max", full_match: float = 0.0, full_share: float = 0.5) -> np.ndarray:
    """BM25 scores of one query's hits to 0..1.

    ``max`` divides by the best score, so the best hit is 1 and every hit stays above 0 (a hit
    is evidence); ``minmax`` maps the worst hit to 0. Empty input gives an empty array, and a
    set of equal scores maps to 1. Every score is then multiplied by
    min(1, best / (``full_share`` x ``full_match``)), ``full_match`` being what a row holding
    each query word once scores (``TextIndex.full_match``; 0: no such bound).

    Why a share and not the full match itself: a best hit measured against the whole query
    (scaled on 88 % of LoCoMo dev's questions) cost MRR 0.635 -> 0.612, since an answer seldom
    repeats the question's words; held to half of it, 29 % are scaled and MRR stays 0.635. For
    the same reason the full match counts only a query's four rarest words
    (``RecallConfig.text_full_words``): a long question's whole grows with its length, which an
    answer's words do not.
    """
    scores = np.asarray(scores, dtype=np.float64)
    if scores.size == 0:
        return scores
    top = float(scores.max())
    if top <= 0:
        return np.zeros_like(scores)
    scale = min(1.0, top / (full_share * full_match)) if full_match > 0 and full_share > 0 else 1.0
    if how == "max":
        return scores / top * scale
    if how == "minmax":
        low = float(scores.min())
        if top == low:
            return np.full_like(scores, scale)
        return (scores - low) / (top - low) * scale
    raise ValueError(f"unknown BM25 normalization {how!r}: use 'max' or 'minmax'")


def hybrid(
    vector: np.ndarray,
    text: np.ndarray,
    *,
    vector_weight: float = 0.7,
    text_weight: float = 0.3,
    vector_hits: bool = True,
    text_hits: bool = True,
) -> np.ndarray:
    """Fuse the two channels; a channel that returned nothing leaves the other standing alone."""
    vector = np.asarray(vector, dtype=np.float64)
    text = np.asarray(text, dtype=np.float64)
    if vector_hits and text_hits:
        return vector_weight * vector + text_weight * text
    if vector_hits:
        return vector.copy()
    if text_hits:
        return text.copy()
    return np.zeros_like(vector)


def decay_factor(day: date | None, now: date, half_life_days: float = 30.0) -> float:
    """exp(-ln 2 x age / half-life) for a dated note; 1 for undated ones and future dates."""
    if day is None:
        return 1.0
    age = (now - day).days
    if age <= 0:
        return 1.0
    return math.exp(-math.log(2) * age / half_life_days)


def mmr_order(
    relevance: Sequence[float], vectors: np.ndarray, k: int, lam: float = 0.7
) -> list[int]:
    """Maximal marginal relevance: indices picked greedily by lam x rel - (1-lam) x max sim.

    ``vectors`` are unit rows, so their dot products are cosine similarities.
    """
    rel = np.asarray(relevance, dtype=np.float64)
    n = len(rel)
    if n == 0 or k <= 0:
        return []
    sims = np.asarray(vectors, dtype=np.float64) @ np.asarray(vectors, dtype=np.float64).T
    chosen: list[int] = []
    best_sim = np.full(n, -np.inf)
    remaining = np.ones(n, dtype=bool)
    while len(chosen) < min(k, n):
        penalty = np.where(np.isfinite(best_sim), best_sim, 0.0)
        value = lam * rel - (1 - lam) * penalty
        value[~remaining] = -np.inf
        pick = int(np.argmax(value))
        chosen.append(pick)
        remaining[pick] = False
        best_sim = np.maximum(best_sim, sims[pick])
    return chosen
