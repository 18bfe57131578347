"""A transcript result whose last turn asks a question carries the next turn, which answers it
(``carry_answer``): a question matches the words of the question that asked it far better than
the answer does, and a reader needs the answer. A result that ends on a statement, or on the
file's last turn, carries nothing more, and no turn is shown twice."""

from __future__ import annotations

import pytest

from memory_pipeline.recall.results import ends_on_question
from memory_pipeline.recall.search import search
from memory_pipeline_tests.helpers import write
from memory_pipeline_tests.helpers.recall import ingest, recall_settings, turn_lines


@pytest.fixture(scope="module")
def chat(tmp_path_factory):
    base = tmp_path_factory.mktemp("answers")
    root, lance_uri = base / "agents", str(base / "lancedb")
    write(root, "bot/sessions/kim/s1.jsonl", turn_lines(
        ("user", "I finally repainted the garden shed last weekend.", "2026-11-02T09:00:00Z", "t1"),
        ("assistant", "Nice work! Which colour did you choose for the shed?", "2026-11-02T09:00:20Z", "t2"),
        ("user", "Sage green, with white trim on the door.", "2026-11-02T09:01:00Z", "t3"),
        ("assistant", "That sounds calm. Are the tomatoes in the greenhouse ripe yet?", "2026-11-02T09:01:30Z", "t4"),
    ))
    ingest(root, lance_uri)
    return root, lance_uri


def ask(chat, question: str, **recall):
    root, lance_uri = chat
    settings = recall_settings(root, lance_uri, **recall)
    return search(question, "bot", "kim", sources=["sessions"], store=lance_uri, settings=settings, min_score=0, k=10)


def test_a_result_ending_on_a_question_carries_its_answer(chat):
    top = ask(chat, "Which colour did Kim choose for the shed?")[0]
    assert top.turn_ids == ["t1", "t2", "t3"]
    assert "Sage green" in top.snippet


def test_without_carry_answer_the_result_is_the_turn_and_its_best_neighbour(chat):
    results = ask(chat, "Which colour did Kim choose for the shed?", carry_answer=False)
    assert results[0].turn_ids == ["t1", "t2"]
    assert [r.turn_ids for r in results[1:]] == [["t3", "t4"]], "the answer is then a result of its own"


def test_a_question_on_the_last_turn_or_a_statement_carries_nothing_more(chat):
    results = ask(chat, "tomatoes greenhouse ripe")
    assert results[0].turn_ids == ["t3", "t4"]
    shown = [t for r in results for t in r.turn_ids]
    assert sorted(shown) == ["t1", "t2", "t3", "t4"], "every turn once"
    # The answer found itself: its window ends on that statement, and the question after it stays out.
    results = ask(chat, "white trim on the door")
    assert [r.turn_ids for r in results[:2]] == [["t2", "t3"], ["t4"]]


@pytest.mark.parametrize(("text", "asks"), [
    ("Did you make it?", True),
    ("Which one has been your favourite? 😊", True),
    ('She asked "why?"', True),
    ("What? No, I said blue.", False),
    ("Sage green.", False),
    ("", False),
])
def test_what_counts_as_ending_on_a_question(text, asks):
    assert ends_on_question(text) is asks
