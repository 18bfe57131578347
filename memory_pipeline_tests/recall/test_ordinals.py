"""Proves: a question about the n-th of the things the assistant made in an earlier chat ("you
wrote me two poems ... the second poem") gets that chat's n-th such turn first, when the chat
holds exactly as many as the question counts; a count that does not match (the things may be the
items of one list) or a question that names no place keeps the ranking as it was.

The chats are ingested through the real L0 Dagster job with the real embedder, and asked through
``search`` as a user asks them.
"""

from __future__ import annotations

import pytest

from memory_pipeline.recall.answers import asked_ordinal
from memory_pipeline.recall.search import search
from memory_pipeline_tests.helpers import write
from memory_pipeline_tests.helpers.recall import ingest, recall_settings, turn_lines

FIRST = "Here is a sad poem about the sea for you: the tide goes out and takes the light away."
SECOND = "Here is a brighter poem: the tide comes back with morning gold and the gulls return."


@pytest.fixture(scope="module")
def poems(tmp_path_factory):
    base = tmp_path_factory.mktemp("poems")
    root, lance_uri = base / "agents", str(base / "lancedb")
    write(root, "bot/sessions/kim/s1.jsonl", turn_lines(
        ("user", "Write me a short sad poem about the sea.", "2026-05-01T09:00:00Z", "t1"),
        ("assistant", FIRST, "2026-05-01T09:00:10Z", "t2"),
        ("user", "Make it more hopeful, please.", "2026-05-01T09:01:00Z", "t3"),
        ("assistant", SECOND, "2026-05-01T09:01:10Z", "t4"),
        ("user", "Thanks, both are lovely.", "2026-05-01T09:02:00Z", "t5"),
    ))
    write(root, "bot/sessions/kim/s2.jsonl", turn_lines(
        ("user", "Which train goes to the coast on Sundays?", "2026-05-02T09:00:00Z", "t1"),
        ("assistant", "The 8:15 regional train runs to the coast on Sundays.", "2026-05-02T09:00:10Z", "t2"),
    ))
    ingest(root, lance_uri, embedder="minilm")
    settings = recall_settings(root, lance_uri).model_copy(update={"embedder": "minilm"})
    return lambda question: search(question, "bot", "kim", store=lance_uri, settings=settings, min_score=0, k=3)


def _first_turn(results) -> str:
    return results[0].snippet


def test_the_nth_of_the_things_the_assistant_made_comes_first(poems):
    results = poems("In an earlier chat you wrote me two sad poems about the sea. What did the second poem say?")
    assert SECOND.split(": ", 1)[1] in _first_turn(results)
    assert results[0].score >= results[1].score
    # "the last" of two is the second; "the first" is the first.
    assert SECOND.split(": ", 1)[1] in _first_turn(poems("You wrote two sea poems for me. What was the last poem about?"))
    assert FIRST.split(": ", 1)[1] in _first_turn(poems("You wrote two sea poems for me. What was the first poem about?"))


def test_a_count_the_chat_does_not_hold_keeps_the_ranking(poems):
    # Three poems counted, two written: the poems may be the items of one answer's list.
    asked = "In an earlier chat you wrote me three sad poems about the sea. What did the second poem say?"
    assert FIRST.split(": ", 1)[1] in _first_turn(poems(asked))
    assert FIRST.split(": ", 1)[1] in _first_turn(poems("What did the sad poem about the sea you wrote me say?"))


def test_what_an_ordinal_question_asks():
    assert asked_ordinal("You created two sad songs for me. What was the chorus in the second song?") == (2, 2, "song")
    assert asked_ordinal("You listed 10 hotels. Which was the third hotel?") == (3, 10, "hotel")
    assert asked_ordinal("You wrote three poems; what was the last poem about?") == (3, 3, "poem")
    assert asked_ordinal("Of the 3 recipes you gave me, what was in the 2nd recipe?") == (2, 3, "recip")
    # No count of the thing, a place past the count, or no place at all.
    assert asked_ordinal("What was the last day of the trip?") is None
    assert asked_ordinal("You wrote two poems. What was the third poem?") is None
    assert asked_ordinal("You wrote two poems and three songs. What was the second song?") == (2, 3, "song")
    assert asked_ordinal("When was the first time I went hiking?") is None
