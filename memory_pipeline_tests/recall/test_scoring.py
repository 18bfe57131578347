"""Recall's arithmetic (DESIGN §6) on plain numbers, then the same rules through ``search``.

Proves: BM25 normalization to 0..1, held to the query's full match (after the note that answered
a query is deleted, the unrelated note that shares one of its words stays below min_score, where
scaling per query alone showed it; the full match counted over the query's rarest words), the
0.7/0.3 fusion and a lone channel standing alone, the 30-day half-life on dated notes only, MMR
preferring variety, the 1.2x user boost, the user's copy of a text beating the agent-wide copy,
the agent-wide pool answering when the user has nothing, and a team member reading its leader's
memory only as a fallback.
"""

from __future__ import annotations

import math
from datetime import date
from pathlib import Path

import numpy as np
import pytest

from memory_pipeline.embedding import HashEmbedder
from memory_pipeline.recall import scoring
from memory_pipeline.recall.index.bm25 import TextIndex
from memory_pipeline.recall.scope import is_read_only, recall_scopes
from memory_pipeline.recall.search import search
from memory_pipeline.store.base import LanceBase
from memory_pipeline.store.tables import CHUNKS
from memory_pipeline_tests.helpers import write
from memory_pipeline_tests.helpers.recall import ingest, recall_settings

REFUND_QUERY = "refund policy for annual plans"
NOTES = {"refund": "Refund policy: annual plans are refundable within 30 days.",
         "vpn": "The VPN plans for the office are on the wiki.", "standup": "Standup moved to 9:30.",
         "invoices": "Invoices go to the finance mailbox.", "dark": "Dark mode is on for the dashboards."}


def test_bm25_max_normalization_puts_best_at_one_and_keeps_hits_positive():
    assert scoring.normalize_bm25(np.array([2.0, 1.0, 0.5])).tolist() == [1.0, 0.5, 0.25]


def test_bm25_minmax_normalization_spans_zero_to_one():
    assert scoring.normalize_bm25(np.array([3.0, 2.0, 1.0]), "minmax").tolist() == [1.0, 0.5, 0.0]
    assert scoring.normalize_bm25(np.array([2.0, 2.0]), "minmax").tolist() == [1.0, 1.0]
    assert scoring.normalize_bm25(np.array([])).size == 0
    with pytest.raises(ValueError, match="unknown BM25 normalization"):
        scoring.normalize_bm25(np.array([1.0]), "zscore")


def test_a_best_hit_below_half_a_full_match_counts_for_its_share():
    # A full match scores 4: a best hit of 2 or more is a full text match, one of 1 counts for half.
    assert scoring.normalize_bm25(np.array([3.0, 2.0, 1.0]), "minmax", 4.0).tolist() == [1.0, 0.5, 0.0]
    assert scoring.normalize_bm25(np.array([1.0, 0.5]), "max", 4.0).tolist() == [0.5, 0.25]
    assert scoring.normalize_bm25(np.array([1.0]), "minmax", 4.0).tolist() == [0.5]
    assert scoring.normalize_bm25(np.array([1.0]), "minmax", 4.0, full_share=0.0).tolist() == [1.0]
    # The full match: each query word once in a row of average length; a word no row holds as if one did.
    index = TextIndex(list(NOTES.values()))
    one, two = (math.log(1 + (5 - df + 0.5) / (df + 0.5)) / 2.2 for df in (1, 2))
    assert index.full_match(REFUND_QUERY) == pytest.approx(3 * one + two)  # refund, polici, annual; plan in two rows
    assert index.full_match("refund zeppelin") == pytest.approx(2 * one)
    # Over the query's rarest words only: a long question's whole grows with it, an answer does not.
    assert index.full_match(REFUND_QUERY, words=3) == pytest.approx(3 * one)  # plan, in two rows, left out
    assert index.full_match(REFUND_QUERY, words=9) == index.full_match(REFUND_QUERY)
    assert index.full_match("refund zeppelin", words=1) == pytest.approx(one)


class WeakCosine(HashEmbedder):
    """Notes through the hashing embedder; the query at cosine 0.1 to one note and about none to
    the others: the unrelated note of the issue, sharing a word with the query and little meaning."""

    def __init__(self, note: np.ndarray, others: np.ndarray):
        super().__init__()
        away = np.random.default_rng(0).standard_normal(self.dim)
        for v in (note, *others):  # orthogonal to every note
            away -= (away @ v) / (v @ v) * v
        self.vector = (0.1 * note + math.sqrt(1 - 0.01) * away / np.linalg.norm(away)).astype(np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self.vector


def test_after_a_deletion_an_unrelated_note_stays_below_the_minimum(tmp_path):
    root, uri = tmp_path / "agents", str(tmp_path / "lancedb")
    for name, text in NOTES.items():
        write(root, f"support-bot/users/alice/memory/{name}.md", text + "\n")
    ingest(root, uri)
    settings = recall_settings(root, uri)
    stored = LanceBase(uri).read(CHUNKS, columns=["path", "vector"]).to_dicts()
    vectors = {Path(r["path"]).stem: np.asarray(r["vector"], dtype=np.float64) for r in stored}
    embedder = WeakCosine(vectors["vpn"], [v for k, v in vectors.items() if k != "vpn"])
    per_query = settings.recall.model_copy(update={"text_full_share": 0.0})  # the best hit always 1

    def found(config=None):
        return [(Path(r.path).stem, round(r.parts["text"], 3), 0 <= r.score <= 1)
                for r in search(REFUND_QUERY, "support-bot", "alice", store=uri, settings=settings,
                                embedder=embedder, config=config)]

    assert found()[0] == ("refund", 1.0, True)  # the answer: a full text match
    (root / "support-bot/users/alice/memory/refund.md").unlink()
    ingest(root, uri)
    assert found(per_query) == [("vpn", 1.0, True)]  # 1.2 x (0.7 x 0.1 + 0.3 x 1.0) = 0.44: shown
    assert found() == []  # its one common word is a small share of a full match of the query
    # Held to a row holding only the query's rarest word, that one word is a full match again.
    assert found(settings.recall.model_copy(update={"text_full_words": 1})) == [("vpn", 1.0, True)]


def test_hybrid_is_weighted_sum_and_a_lone_channel_stands_alone():
    v, t = np.array([0.8, 0.2]), np.array([0.5, 1.0])
    assert np.allclose(scoring.hybrid(v, t), [0.7 * 0.8 + 0.3 * 0.5, 0.7 * 0.2 + 0.3 * 1.0])
    assert np.allclose(scoring.hybrid(v, t, vector_weight=0.5, text_weight=0.5), [0.65, 0.6])
    assert np.allclose(scoring.hybrid(v, np.zeros(2), text_hits=False), v)
    assert np.allclose(scoring.hybrid(np.zeros(2), t, vector_hits=False), t)


def test_cosine_maps_to_unit_interval():
    assert scoring.cosine_to_unit(np.array([-0.4, 0.3, 1.2])).tolist() == [0.0, 0.3, 1.0]


def test_decay_halves_every_half_life_and_spares_undated_and_future_notes():
    now = date(2026, 11, 22)
    assert scoring.decay_factor(date(2026, 10, 23), now) == pytest.approx(0.5)
    assert scoring.decay_factor(date(2026, 9, 23), now) == pytest.approx(0.25)
    assert scoring.decay_factor(date(2026, 11, 12), now, half_life_days=10) == pytest.approx(0.5)
    assert scoring.decay_factor(None, now) == 1.0
    assert scoring.decay_factor(date(2026, 12, 1), now) == 1.0
    assert scoring.decay_factor(date(2026, 11, 21), now) == pytest.approx(math.exp(-math.log(2) / 30))


def test_mmr_skips_a_near_duplicate_for_a_different_result():
    vectors = np.array([[1.0, 0.0], [0.999, 0.0447], [0.0, 1.0]])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    relevance = [1.0, 0.95, 0.7]
    assert scoring.mmr_order(relevance, vectors, 2, lam=1.0) == [0, 1]
    assert scoring.mmr_order(relevance, vectors, 2, lam=0.7) == [0, 2]
    assert scoring.mmr_order([], np.zeros((0, 2)), 3) == []


def test_user_memory_is_boosted_and_parts_explain_the_score(indexed, settings, embedder):
    results = search("contacted by email never phone", "support-bot", "alice", store=indexed[1], embedder=embedder, settings=settings, min_score=0)
    top = results[0]
    assert top.path == "support-bot/users/alice/MEMORY.md"
    assert top.tenant == "support-bot~alice"
    assert top.parts["boost"] == 1.2
    expected = (0.7 * top.parts["vector"] + 0.3 * top.parts["text"] + top.parts["signals"]) * top.parts["decay"] * 1.2
    assert top.parts["ranked"] == pytest.approx(expected, abs=1e-5)
    assert top.score == pytest.approx(min(1.0, expected), abs=1e-5)  # a score is 0..1, as min_score is
    assert all(0.0 <= r.score <= 1.0 for r in results)
    assert top.citation == f"{top.path}#L{top.start_line}-L{top.end_line}"
    global_hits = [r for r in results if r.tenant == "support-bot~_global"]
    assert global_hits
    assert all(r.parts["boost"] == 1.0 for r in global_hits)


def test_user_copy_wins_over_the_same_global_text(indexed, settings, embedder):
    results = search("VPN certificate rotates every month", "support-bot", "alice", store=indexed[1], embedder=embedder, settings=settings, min_score=0)
    copies = [r for r in results if "VPN certificate" in r.snippet]
    assert [r.path for r in copies] == ["support-bot/users/alice/memory/network.md"]
    # Without a user the agent-wide copy is the one found.
    alone = search("VPN certificate rotates every month", "support-bot", None, store=indexed[1], embedder=embedder, settings=settings, min_score=0)
    assert alone[0].path == "support-bot/memory/network.md"


def test_agent_wide_pool_answers_when_the_user_has_no_hit(indexed, settings, embedder):
    results = search("annual plans refundable within 30 days", "support-bot", "bob", store=indexed[1], embedder=embedder, settings=settings)
    assert results and results[0].path == "support-bot/MEMORY.md"
    assert results[0].tenant == "support-bot~_global"


def test_dated_notes_decay_with_age_and_undated_ones_do_not(indexed, settings, embedder):
    query = "billing dashboard outage queue worker"
    results = search(query, "support-bot", None, store=indexed[1], embedder=embedder, settings=settings, min_score=0, now=date(2026, 11, 20))
    by_path = {r.path: r for r in results}
    old, new = by_path["support-bot/memory/2026-10-01.md"], by_path["support-bot/memory/2026-11-20.md"]
    assert new.parts["decay"] == 1.0
    assert old.parts["decay"] == pytest.approx(scoring.decay_factor(date(2026, 10, 1), date(2026, 11, 20)))
    assert by_path["support-bot/MEMORY.md"].parts["decay"] == 1.0 if "support-bot/MEMORY.md" in by_path else True
    slower = recall_settings(*indexed, half_life_days=3650.0)
    again = {r.path: r for r in search(query, "support-bot", None, store=indexed[1], embedder=embedder, settings=slower, min_score=0, now=date(2026, 11, 20))}
    assert again["support-bot/memory/2026-10-01.md"].score > old.score


def test_weights_are_configurable(indexed, embedder):
    text_only = recall_settings(*indexed, vector_weight=0.0, text_weight=1.0)
    results = search("pineapple codeword", "support-bot", "bob", store=indexed[1], embedder=embedder, settings=text_only, min_score=0)
    top = results[0]
    assert top.parts["ranked"] == pytest.approx((top.parts["text"] + top.parts["signals"]) * top.parts["decay"] * top.parts["boost"], abs=1e-5)


def test_min_score_and_k_cut_the_results(indexed, settings, embedder):
    many = search("plans email outage VPN", "support-bot", "alice", store=indexed[1], embedder=embedder, settings=settings, min_score=0, k=10)
    assert len(many) > 2
    assert [r.score for r in many] == sorted((r.score for r in many), reverse=True)
    assert len(search("plans email outage VPN", "support-bot", "alice", store=indexed[1], embedder=embedder, settings=settings, min_score=0, k=2)) == 2
    cut = search("plans email outage VPN", "support-bot", "alice", store=indexed[1], embedder=embedder, settings=settings, min_score=many[1].score)
    assert cut
    assert all(r.score >= many[1].score for r in cut)


def test_team_member_reads_its_leader_only_as_a_fallback(indexed, settings, embedder):
    assert is_read_only("helper-bot", settings) and not is_read_only("support-bot", settings)
    scopes = recall_scopes("helper-bot", "alice", settings)
    assert [(s.key, s.fallback) for s in scopes] == [
        ("helper-bot~alice", False), ("helper-bot~_global", False),
        ("support-bot~alice", True), ("support-bot~_global", True),
    ]
    own = search("shipping labels questions", "helper-bot", "alice", store=indexed[1], embedder=embedder, settings=settings)
    assert own and {r.tenant for r in own} == {"helper-bot~_global"}
    fallback = search("annual plans refundable within 30 days", "helper-bot", "alice", store=indexed[1], embedder=embedder, settings=settings)
    assert fallback and fallback[0].tenant == "support-bot~_global"


def test_transcript_results_carry_turn_ids_and_a_neighbouring_turn(indexed, settings, embedder):
    results = search("API rate limit requests per minute", "support-bot", "alice", sources=["sessions"], store=indexed[1], embedder=embedder, settings=settings, min_score=0)
    top = results[0]
    assert top.source == "sessions" and "t2" in top.turn_ids
    assert len(top.turn_ids) == 2 and top.end_line == top.start_line + 1
    assert "2,000 requests per minute" in top.snippet
    assert all(r.source == "sessions" for r in results)
    shown = [t for r in results for t in r.turn_ids]
    assert len(shown) == len(set(shown)), "a turn is shown at most once"


def test_mmr_flag_changes_only_the_order_of_the_same_pool(indexed, settings, embedder):
    plain = search("outage queue worker billing", "support-bot", "alice", store=indexed[1], embedder=embedder, settings=settings, min_score=0, k=4)
    varied = search("outage queue worker billing", "support-bot", "alice", store=indexed[1], embedder=embedder, settings=settings, min_score=0, k=4, mmr=True)
    assert len(varied) == len(plain)
    assert varied[0].citation == plain[0].citation


def test_unknown_source_is_refused_with_the_known_ones(indexed, settings, embedder):
    with pytest.raises(ValueError, match="unknown source.*memory"):
        search("anything at all", "support-bot", "alice", sources=["notes"], store=indexed[1], embedder=embedder, settings=settings)
