"""Proves: embedding only the claims a pair could use changes no supersession decision, and
pairing only claims that share a key finds every pair the rules accept.

``detect`` embeds and reads only the pairs every rule but the similarity lets through
(``_possible_pairs``). On the sample workspace's busiest tenant, with the real spaCy model and
all-MiniLM-L6-v2, it decides exactly what reading every pair of every claim decides (the way it
was done before the filter: all claims embedded, every pair above the lowest bar read), while
embedding a fraction of the claims. The pairs it reads are those of claims sharing a key noun or
value (``_KeyIndex``): on the same tenant, they are the pairs the rules accept over every pair of
claims, in the same order, whatever the block of old claims gathered at once.
"""

from __future__ import annotations

import numpy as np
import pytest

from memory_pipeline.tenancy import Tenant
from memory_pipeline.timeline.claims import without_values
from memory_pipeline.timeline.statements import tenant_statements
from memory_pipeline.timeline.supersede import (
    CITED_CHANGE, MIN_WORDS, Supersession, _candidate, _possible_pairs, _Sentence, claims_of, detect,
)

pytestmark = pytest.mark.slow

TENANT = Tenant("support-bot", "alice")


class CountingEmbedder:
    """The real embedder, counting the texts it is asked for."""

    def __init__(self, embedder):
        self.embedder, self.texts = embedder, 0

    def embed(self, texts):
        self.texts += len(texts)
        return self.embedder.embed(texts)


def claims_and_first_said(statements, nlp) -> tuple[list[_Sentence], dict]:
    """The claims ``detect`` compares, and when each value was first said."""
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
    return sentences, first_said


def every_pair(statements, nlp, embedder) -> tuple[list[Supersession], int]:
    """``detect`` without the filter: every claim embedded, every pair above the lowest bar read."""
    sentences, first_said = claims_and_first_said(statements, nlp)
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


def test_filtered_pairs_decide_as_every_pair(sample_root, nlp, minilm):
    statements = tenant_statements(sample_root, TENANT)
    expected, claims = every_pair(statements, nlp, minilm)
    counting = CountingEmbedder(minilm)
    found = detect(statements, nlp, counting)
    assert len(expected) >= 5  # the tenant's notes and sessions change several facts
    assert decided(found) == decided(expected)
    assert 0 < counting.texts < claims / 2


def test_keyed_pairs_are_every_pair_the_rules_accept(sample_root, nlp, monkeypatch):
    from memory_pipeline.timeline import supersede

    sentences, first_said = claims_and_first_said(tenant_statements(sample_root, TENANT), nlp)
    expected = [
        (i, j) for i, old in enumerate(sentences) for j, new in enumerate(sentences)
        if old.statement.order < new.statement.order and old.statement.ref != new.statement.ref
        and _candidate(old, new, float("inf"), first_said) is not None
    ]
    assert len(expected) >= 10
    assert _possible_pairs(sentences, first_said) == expected
    monkeypatch.setattr(supersede, "PAIR_ROWS", 7)
    assert _possible_pairs(sentences, first_said) == expected
