"""Proves: for a question asking a number, a first result that states none (the user's own earlier
question about it, the assistant's advice when the question is about the user) gives its place to
the best-ranked result close behind it that states one; scores stay in rank order; an episode
keeps its place and never takes another's; a result far less relevant is not brought up.

The chats are ingested through the real L0 Dagster job with the real embedder, and asked through
``search`` as a user asks them.
"""

from __future__ import annotations

from datetime import date

import pytest

from memory_pipeline.recall.answers import number_first
from memory_pipeline.recall.query import understand
from memory_pipeline.recall.results import Candidate
from memory_pipeline.recall.search import search
from memory_pipeline_tests.helpers import write
from memory_pipeline_tests.helpers.recall import RankedRows, ingest, recall_settings, turn_lines

NOW = date(2026, 11, 26)
ASKED = "How many tomato plants did I plant in the raised bed?"
COUNT = "I planted 5 tomato plants in the raised bed."
OTHER = ["The bus to work leaves at eight.", "My sister moved to Porto in spring.", "We watched a film about whales."]


@pytest.fixture(scope="module")
def garden(tmp_path_factory):
    base = tmp_path_factory.mktemp("garden")
    root, lance_uri = base / "agents", str(base / "lancedb")
    # Separate chats, so that no turn is carried with another as its neighbour.
    write(root, "bot/sessions/lee/s1.jsonl", turn_lines(
        ("user", "How many tomato plants fit in a raised bed?", "2026-05-01T09:00:00Z", "t1")))
    write(root, "bot/sessions/lee/s2.jsonl", turn_lines(("user", COUNT, "2026-06-01T09:00:00Z", "t1")))
    for n, text in enumerate(OTHER):
        write(root, f"bot/sessions/lee/o{n}.jsonl", turn_lines(("user", text, f"2026-04-0{n + 1}T09:00:00Z", "t1")))
    ingest(root, lance_uri, embedder="minilm")
    return root, lance_uri


def test_the_result_stating_the_number_asked_for_comes_first(garden):
    root, lance_uri = garden
    settings = recall_settings(root, lance_uri).model_copy(update={"embedder": "minilm"})
    results = search(ASKED, "bot", "lee", store=lance_uri, settings=settings, min_score=0, k=2)
    # The user's earlier question matches best, but states no number.
    assert [r.path.rsplit("/", 1)[-1] for r in results] == ["s2.jsonl", "s1.jsonl"]
    assert COUNT in results[0].snippet
    assert results[0].score >= results[1].score


def _made(*specs: tuple[RankedRows, int, float]) -> list[Candidate]:
    return [Candidate(None, rows, i, 0.0, 0.0, relevance=rel, bonus=0.0, decay=1.0, score=rel) for rows, i, rel in specs]


def _texts(ranked: list[Candidate]) -> list[str]:
    return [c.rows.content(c.row) for c in ranked]


def test_the_assistants_numbers_do_not_answer_a_question_about_the_user():
    chat = RankedRows("sessions", ["Leave 18 to 24 inches between tomato plants.", "What else grows well beside tomatoes?",
                                   "I planted 5 tomato plants and 3 cucumbers."], speakers=["assistant", "user", "user"])
    asked = understand("How many plants did I plant?", NOW)
    ranked = number_first(_made((chat, 0, 0.9), (chat, 1, 0.8), (chat, 2, 0.7)), asked)
    assert _texts(ranked) == ["I planted 5 tomato plants and 3 cucumbers.", "Leave 18 to 24 inches between tomato plants.",
                              "What else grows well beside tomatoes?"]
    assert [c.score for c in ranked] == [0.9, 0.8, 0.7]
    # Asked about the assistant's words, its numbers answer.
    asked = understand("How many inches apart did you suggest?", NOW)
    ranked = number_first(_made((chat, 0, 0.9), (chat, 2, 0.8)), asked)
    assert _texts(ranked)[0] == "Leave 18 to 24 inches between tomato plants."


def test_an_episode_a_weak_match_or_another_kind_of_question_keeps_the_order():
    chat = RankedRows("sessions", ["Which tomatoes suit a raised bed?", "I planted 5 tomato plants."], speakers=["user", "user"])
    episode = RankedRows("episodes", ["On 2 May 2026 the user planned a raised bed."])
    question = "How many tomato plants did I plant?"
    kept = [
        _made((episode, 0, 0.9), (chat, 1, 0.8)),  # an episode leads: its digits are its day's
        _made((chat, 0, 0.9), (episode, 0, 0.85)),  # and never takes the place
        _made((chat, 0, 0.9), (chat, 1, 0.5)),  # far less relevant than the first
    ]
    for made in kept:
        assert number_first(list(made), understand(question, NOW)) == made
    made = _made((chat, 0, 0.9), (chat, 1, 0.8))
    assert number_first(list(made), understand("Which tomatoes did I plant?", NOW)) == made
