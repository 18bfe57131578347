"""BM25 over one tenant's rows, in memory, for recall's full-text channel.

Each tenant's rows of a source table get their own index, built once when the rows are loaded
(the rows never change once loaded; a write reloads them). Two reasons over LanceDB's shared
full-text index, filtered by tenant at query time:

- speed: the tenant filter is the slow part of LanceDB's query on a large table (43 ms p95 for a
  1M-row tenant; ``bench/recall.py`` measures both);
- isolation: the statistics BM25 ranks by (how rare a word is, how long documents are) are the
  tenant's own, so one tenant's writes never shift another's ranking.

Text is analysed the way LanceDB's index does it by default: lower case, runs of letters and
digits, Lucene's English stop words dropped, Snowball English stems (PyStemmer). Scores are
Lucene's BM25 as ``bm25s`` computes them (its ``lucene`` method; the tests hold the two equal).
The index is built with whole-array operations, since ``bm25s`` builds it one document at a time
in Python: at 1M rows, about 2 s here against 45 s (tokenizing included).
"""

from __future__ import annotations

import math
import re
import threading

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import Stemmer

K1, B = 1.2, 0.75
DENSE_MIN_ROWS, DENSE_MAX_STEMS = 10_000, 16
MAX_WORD_CHARS = 40  # longer "words" (hashes, base64) are not words
_SPLIT = r"[^\p{L}\p{N}]+"  # Arrow (RE2): anything but letters and digits separates words
_WORD = re.compile(r"[^\W_]+")  # Python: runs of letters and digits, the same words
# Lucene's English stop words (``bm25s.stopwords.STOPWORDS_EN``, which the tests compare): not
# imported from there, since importing ``bm25s`` imports SciPy, 1 s of a new process's first query.
STOPWORDS_EN = (
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not",
    "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was",
    "will", "with",
)
_STOP = frozenset(STOPWORDS_EN)
_local = threading.local()


def _stemmer() -> Stemmer.Stemmer:
    # A Stemmer object must not be shared between threads.
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = Stemmer.Stemmer("english")
    return stemmer


def _words(texts: list[str] | pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(document of each word, stem code of each word, stems): the indexable words of ``texts``.

    Splitting and lower-casing run in Arrow over all texts at once; stop words, over-long words
    and stemming are applied once per distinct word form, not once per occurrence.
    """
    if isinstance(texts, (pa.Array, pa.ChunkedArray)):
        column = texts.cast(pa.large_string())
        column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    else:
        column = pa.array(texts, pa.large_string())
    words = pc.split_pattern_regex(pc.utf8_lower(column), _SPLIT)
    lengths = pc.fill_null(pc.list_value_length(words), 0).to_numpy(zero_copy_only=False)
    doc = np.repeat(np.arange(len(texts), dtype=np.int64), lengths)
    encoded = pc.dictionary_encode(pc.list_flatten(words))
    forms = encoded.dictionary.to_pylist()
    stems = _stemmer().stemWords(forms)
    keep = np.array([bool(w) and w not in _STOP and len(w) <= MAX_WORD_CHARS for w in forms], dtype=bool)
    distinct = sorted({s for s, k in zip(stems, keep.tolist()) if k})
    code_of = {s: i for i, s in enumerate(distinct)}
    form_code = np.array([code_of[s] if k else -1 for s, k in zip(stems, keep.tolist())], dtype=np.int64)
    codes = form_code[encoded.indices.to_numpy(zero_copy_only=False)] if len(forms) else np.zeros(0, np.int64)
    kept = codes >= 0
    return doc[kept], codes[kept], distinct


def query_words(text: str) -> list[str]:
    """The stems of one short text, as ``_words`` finds them (Python's ``re``: one text does not
    pay for compiling Arrow's regular expression)."""
    forms = [w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) <= MAX_WORD_CHARS]
    return _stemmer().stemWords(forms)


class TextIndex:
    """``top(query, limit)`` -> (row indices, BM25 scores) of the rows that match, best first.

    Stored as one sparse column per stem: the rows holding it, their precomputed score and their
    word count (with each row's length, what ``updated`` scores a changed tenant's rows from).
    """

    def __init__(self, texts: list[str] | pa.Array | pa.ChunkedArray):
        n = len(texts)
        doc, codes, stems = _words(texts) if n else (np.zeros(0, np.int64), np.zeros(0, np.int64), [])
        length = np.bincount(doc, minlength=n)
        # (stem, row) pairs sorted by stem then row, and how often each occurs.
        pairs, tf = np.unique(codes * max(n, 1) + doc, return_counts=True)
        self._index(stems, pairs // max(n, 1), pairs % max(n, 1), tf, length)

    def _index(self, stems: list[str], stem: np.ndarray, row: np.ndarray, tf: np.ndarray, length: np.ndarray) -> None:
        """Score the postings (``stem``, ``row``, ``tf``), sorted by stem then row, of rows of
        ``length`` indexed words: the one place scores are computed, so an index updated in
        place (``updated``) scores exactly as one built from the texts."""
        self.rows = n = len(length)
        self.vocab = {s: i for i, s in enumerate(stems)}
        self.length = np.asarray(length, dtype=np.int32)
        self.tf = np.asarray(tf, dtype=np.int32)
        length = self.length.astype(np.float64)
        mean_length = float(length.mean()) if n else 0.0
        df = np.bincount(stem, minlength=len(stems))
        idf = np.log(1 + (n - df + 0.5) / (df + 0.5))
        norm = K1 * ((1 - B) + B * length[row] / (mean_length or 1.0))
        self.scores = (idf[stem] * tf / (norm + tf)).astype(np.float32)
        self.members = np.asarray(row, dtype=np.int32)  # ascending within each stem
        self.starts = np.concatenate([[0], np.cumsum(df)]).astype(np.int64)
        # The most common stems of a large tenant also get a dense column (a score per row):
        # adding 4 MB per 1M rows is several times faster than scattering as many postings.
        self.dense: dict[int, np.ndarray] = {}
        if n >= DENSE_MIN_ROWS:
            common = np.flatnonzero(df * 8 >= n)
            for s in common[np.argsort(-df[common], kind="stable")][:DENSE_MAX_STEMS].tolist():
                column = np.zeros(n, dtype=np.float32)
                lo, hi = self.starts[s], self.starts[s + 1]
                column[self.members[lo:hi]] = self.scores[lo:hi]
                self.dense[s] = column

    def updated(self, new_row: np.ndarray, added: list[str] | pa.Array | pa.ChunkedArray, added_rows: np.ndarray,
                rows: int) -> TextIndex:
        """The index of the rows after a change, without reading the unchanged rows' text again.

        ``new_row[r]`` is the new position of old row ``r`` (-1: deleted); ``added`` are the new
        rows' texts, at positions ``added_rows`` of the ``rows`` rows now. Word counts are kept per posting, so every
        score is computed again from the new statistics, as a build from all texts would.
        """
        n = rows
        old_stems = sorted(self.vocab, key=self.vocab.__getitem__)
        old_stem = np.repeat(np.arange(len(old_stems), dtype=np.int64), np.diff(self.starts))
        moved = new_row[np.asarray(self.members, dtype=np.int64)]
        live = moved >= 0
        doc, codes, add_stems = _words(added) if len(added_rows) else (np.zeros(0, np.int64), np.zeros(0, np.int64), [])
        pairs, add_tf = np.unique(codes * max(len(added_rows), 1) + doc, return_counts=True)
        add_stem, add_doc = pairs // max(len(added_rows), 1), pairs % max(len(added_rows), 1)
        # One sorted vocabulary of the stems still used; old and added codes mapped into it.
        used_old = np.bincount(old_stem[live], minlength=len(old_stems)) > 0
        stems = sorted({s for s, u in zip(old_stems, used_old.tolist()) if u} | set(add_stems))
        code = {s: i for i, s in enumerate(stems)}
        old_map = np.array([code.get(s, -1) for s in old_stems], dtype=np.int64)
        add_map = np.array([code[s] for s in add_stems], dtype=np.int64)
        stem = np.concatenate([old_map[old_stem[live]], add_map[add_stem]]) if len(add_map) else old_map[old_stem[live]]
        row = np.concatenate([moved[live], np.asarray(added_rows, dtype=np.int64)[add_doc]])
        tf = np.concatenate([np.asarray(self.tf)[live], add_tf])
        # Both parts are sorted by (stem, row) already: a stable sort merges the two runs.
        order = np.argsort(stem * max(n, 1) + row, kind="stable")
        length = np.zeros(n, dtype=np.int64)
        old_rows = np.flatnonzero(new_row >= 0)
        length[new_row[old_rows]] = np.asarray(self.length)[old_rows]
        length[np.asarray(added_rows, dtype=np.int64)] = np.bincount(doc, minlength=len(added_rows))
        index = TextIndex.__new__(TextIndex)
        index._index(stems, stem[order], row[order], tf[order], length)
        return index

    def arrays(self) -> tuple[list[str], dict[str, np.ndarray]]:
        """(stems, arrays): everything ``from_arrays`` needs to read the index back."""
        stems = sorted(self.vocab, key=self.vocab.__getitem__)
        dense_stems = np.array(list(self.dense), dtype=np.int64)
        dense = np.stack(list(self.dense.values())) if self.dense else np.zeros((0, self.rows), np.float32)
        arrays = {"scores": self.scores, "members": self.members, "starts": self.starts, "tf": self.tf,
                  "length": self.length, "dense_stems": dense_stems, "dense": dense,
                  "rows": np.array([self.rows], dtype=np.int64)}
        return stems, arrays

    @classmethod
    def from_arrays(cls, stems: list[str], arrays: dict[str, np.ndarray]) -> TextIndex:
        """An index saved before (``files.py``); the arrays may be memory-mapped."""
        index = cls.__new__(cls)
        index.rows = int(arrays["rows"][0])
        index.vocab = {s: i for i, s in enumerate(stems)}
        index.scores, index.members, index.starts = arrays["scores"], arrays["members"], arrays["starts"]
        index.tf, index.length = arrays["tf"], arrays["length"]
        index.dense = {int(s): arrays["dense"][i] for i, s in enumerate(arrays["dense_stems"].tolist())}
        return index

    def full_match(self, query: str, words: int = 0) -> float:
        """What a row of average length holding each of the query's words once scores: the sum
        of their idf / (1 + K1), over its ``words`` rarest words only when given (0: every word).
        A word no row holds counts as rare as a word one row holds (its row would be the only
        one), so a query whose telling words were deleted still asks for them."""
        n = self.rows
        parts = []
        for word in query_words(query):
            s = self.vocab.get(word)
            df = 1 if s is None else int(self.starts[s + 1] - self.starts[s])
            parts.append(math.log(1 + (n - df + 0.5) / (df + 0.5)) / (1 + K1))
        if words:
            parts = sorted(parts, reverse=True)[:words]
        return sum(parts)

    def query_stems(self, query: str) -> list[int]:
        """The query's stems that occur in the index, repeated as often as the query says them."""
        return [self.vocab[s] for s in query_words(query) if s in self.vocab]

    def scores_for(self, query: str) -> np.ndarray:
        """The BM25 score of every row for ``query`` (0 where no query word occurs)."""
        total = np.zeros(self.rows, dtype=np.float32)
        for s in self.query_stems(query):
            lo, hi = self.starts[s], self.starts[s + 1]
            total[self.members[lo:hi]] += self.scores[lo:hi]
        return total

    def top(self, query: str, limit: int, allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The best ``limit`` rows for ``query`` among ``allowed`` ones, best first (exact BM25).

        Rare words are summed over the rows that hold them; once the query's words hold more
        than an eighth of the rows, into one array of every row instead (no sort of millions).
        """
        empty = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if not self.rows or limit <= 0 or not query.strip():
            return empty
        stems = self.query_stems(query)
        if not stems:
            return empty
        spans = [(self.starts[s], self.starts[s + 1]) for s in stems]
        if sum(hi - lo for lo, hi in spans) * 8 < self.rows:
            found = np.concatenate([self.members[lo:hi] for lo, hi in spans])
            score = np.concatenate([self.scores[lo:hi] for lo, hi in spans])
            found, where = np.unique(found, return_inverse=True)
            total = np.bincount(where, weights=score).astype(np.float32)
        else:
            dense = np.zeros(self.rows, dtype=np.float32)
            for s, (lo, hi) in zip(stems, spans):
                column = self.dense.get(s)
                if column is not None:
                    dense += column
                else:
                    np.add.at(dense, self.members[lo:hi], self.scores[lo:hi])
            if allowed is not None:
                dense[~allowed] = 0
            n = min(limit, len(dense))
            top = np.argpartition(-dense, n - 1)[:n] if n < len(dense) else np.arange(len(dense))
            top = top[dense[top] > 0]
            top = top[np.argsort(-dense[top], kind="stable")]
            return top.astype(np.int64), dense[top]
        if allowed is not None:
            keep = allowed[found]
            found, total = found[keep], total[keep]
        n = min(limit, len(found))
        if n == 0:
            return empty
        top = np.argpartition(-total, n - 1)[:n] if n < len(found) else np.arange(len(found))
        top = top[np.argsort(-total[top], kind="stable")]
        return found[top].astype(np.int64), total[top]
