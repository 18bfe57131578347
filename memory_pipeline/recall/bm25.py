"""BM25 over one tenant's rows, in memory (bm25s), for recall's full-text channel.

Each tenant's rows of a source table get their own index, built once when the rows are loaded
(the rows never change once loaded; a write reloads them). Two reasons over LanceDB's shared
full-text index, filtered by tenant at query time:

- speed: the tenant filter is the slow part of LanceDB's query on a large table (43 ms p95 for a
  1M-row tenant, against 25 ms here; ``bench/recall.py`` measures both);
- isolation: the statistics BM25 ranks by (how rare a word is, how long documents are) are the
  tenant's own, so one tenant's writes never shift another's ranking.

Text is analysed the way LanceDB's index does it by default: lower case, words of letters and
digits, English stop words dropped, Snowball English stems.
"""

from __future__ import annotations

import threading

import bm25s
import numpy as np
import Stemmer

TOKEN_PATTERN = r"(?u)\b\w+\b"
K1, B = 1.2, 0.75

_local = threading.local()


def _stemmer() -> Stemmer.Stemmer:
    # A Stemmer object must not be shared between threads.
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = Stemmer.Stemmer("english")
    return stemmer


def tokenize(texts: list[str]):
    return bm25s.tokenize(
        texts, lower=True, token_pattern=TOKEN_PATTERN, stopwords="en", stemmer=_stemmer(),
        show_progress=False,
    )


class TextIndex:
    """``top(query, limit)`` -> (row indices, BM25 scores) of the rows that match, best first."""

    def __init__(self, texts: list[str]):
        self.rows = len(texts)
        self.bm25 = bm25s.BM25(k1=K1, b=B, csc_backend="scipy")
        if self.rows:
            self.bm25.index(tokenize(texts), show_progress=False)

    def top(self, query: str, limit: int, allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        empty = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if not self.rows or limit <= 0 or not query.strip():
            return empty
        words = bm25s.tokenize(
            [query], lower=True, token_pattern=TOKEN_PATTERN, stopwords="en", stemmer=_stemmer(),
            return_ids=False, show_progress=False,
        )[0]
        ids = [i for i in self.bm25.get_tokens_ids(words) if i != self.bm25.vocab_dict.get("")]
        if not ids:
            return empty
        scores = self.bm25.get_scores_from_ids(ids)
        if allowed is not None:
            scores = np.where(allowed, scores, 0)
        hits = int(np.count_nonzero(scores > 0))
        n = min(limit, hits)
        if n == 0:
            return empty
        top = np.argpartition(-scores, n - 1)[:n] if n < len(scores) else np.arange(len(scores))
        top = top[np.argsort(-scores[top], kind="stable")]
        top = top[scores[top] > 0]
        return top.astype(np.int64), scores[top].astype(np.float32)
