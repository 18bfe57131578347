"""Proves: embedding only the claims a pair could use changes no supersession decision.

``detect`` embeds and reads only the pairs every rule but the similarity lets through
(``_possible_pairs``). On the sample workspace's busiest tenant, with the real spaCy model and
all-MiniLM-L6-v2, it decides exactly what reading every pair of every claim decides (the way it
was done before the filter: all claims embedded, every pair above the lowest bar read), while
embedding a fraction of the claims.
"""

from __future__ import annotations

import numpy as np
import pytest

from memory_pipeline.consolidation.claims import without_values
from memory_pipeline.consolidation.statements import tenant_statements
from memory_pipeline.consolidation.supersede import (
    CITED_CHANGE, MIN_WORDS, Supersession, _candidate, _Sentence, claims_of, detect,
)
from memory_pipeline.tenancy import Tenant

pytestmark = pytest.mark.slow

TENANT = Tenant("support-bot", "alice")


class CountingEmbedder:
    """The real embedder, counting the texts it is asked for."""

    def __init__(self, embedder):
        self.embedder, self.texts = embedder, 0

    def embed(self, texts):
        self.texts += len(texts)
        return self.embedder.embed(texts)


def every_pair(statements, nlp, embedder) -> tuple[list[Supersession], int]:
    """``detect`` without the filter: every claim embedded, every pair above the lowest bar read."""
    speakers = frozenset(s.speaker.casefold() for s in statements if s.speaker)
    sentences = [
        _Sentence(s.statement, without_values(s.claim, speakers, short_forms=True)) for s in claims_of(statements, nlp)
        if s.claim.asserts and s.claim.words >= MIN_WORDS
    ]
    first_said: dict = {}
    for s in sentences:
        for klass, values in s.claim.values.items():
            for value in values:
                if (klass, value) not in first_said or s.statement.order < first_said[(klass, value)]:
                    first_said[(klass, value)] = s.statement.order
    vectors = np.asarray(embedder.embed([s.claim.masked for s in sentences]), dtype=np.float32)
    sims = vectors @ vectors.T
    found: dict = {}
    for i, j in zip(*np.nonzero(sims >= CITED_CHANGE), strict=True):
        old, new = sentences[i], sentences[j]
        if old.statement.ref == new.statement.ref or not old.statement.order < new.statement.order:
            continue
        pair = _candidate(old, new, float(sims[i, j]), first_said)
        if pair is not None and ((key := (old.statement.ref, new.statement.ref)) not in found or pair.score > found[key].score):
            found[key] = pair
    first: dict = {}
    for pair in sorted(found.values(), key=lambda p: (p.old.order, p.new.order)):
        first.setdefault(pair.old.ref, pair)
    return sorted(first.values(), key=lambda p: p.old.order), len(sentences)


def decided(pairs: list[Supersession]) -> list[tuple]:
    return [(p.old.ref, p.new.ref, p.old_sentence, p.new_sentence, p.changed, p.cues, p.score) for p in pairs]


def test_filtered_pairs_decide_as_every_pair(sample_root, statement_nlp, minilm):
    statements = tenant_statements(sample_root, TENANT)
    expected, claims = every_pair(statements, statement_nlp, minilm)
    counting = CountingEmbedder(minilm)
    found = detect(statements, statement_nlp, counting)
    assert len(expected) >= 5  # the tenant's notes and sessions change several facts
    assert decided(found) == decided(expected)
    assert 0 < counting.texts < claims / 2
