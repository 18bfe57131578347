"""A question in the first person asks about what the user said, "what did you suggest" about what
the assistant said: recall adds ``role_boost`` (times the share of the row's turns) to the turns of
that role, and nothing to the others or to questions that name no role. A request for advice is
matched by its topic, not by the frame it shares with the user's earlier requests."""

from __future__ import annotations

import pytest

from memory_pipeline.recall.search import search
from memory_pipeline_tests.helpers import write
from memory_pipeline_tests.helpers.recall import ingest, recall_settings, turn_lines

SAID = "The new playlist is called Summer Drive, with forty road songs."


@pytest.fixture(scope="module")
def chats(tmp_path_factory):
    base = tmp_path_factory.mktemp("roles")
    root, lance_uri = base / "agents", str(base / "lancedb")
    # Two sessions, so neither turn is the other's neighbour and each is a result of its own.
    write(root, "bot/sessions/kim/s1.jsonl", turn_lines(("user", SAID, "2026-11-02T09:00:00Z", "t1")))
    write(root, "bot/sessions/kim/s2.jsonl", turn_lines(("assistant", SAID, "2026-11-03T09:00:00Z", "t1")))
    ingest(root, lance_uri)
    return root, lance_uri


def signals(question: str, chats, **recall) -> dict[str, float]:
    root, lance_uri = chats
    results = search(question, "bot", "kim", store=lance_uri, settings=recall_settings(root, lance_uri, **recall),
                     min_score=0, k=10)
    return {r.path.rsplit("/", 1)[-1]: r.parts["signals"] for r in results if r.source == "sessions"}


@pytest.mark.parametrize(("question", "favoured"), [
    ("What is the name of the playlist I made?", "s1.jsonl"),
    ("Which playlist name did you suggest?", "s2.jsonl"),
])
def test_the_role_a_question_asks_about_is_favoured(chats, question, favoured):
    boost = recall_settings(*chats).recall.role_boost
    assert boost > 0
    got = signals(question, chats)
    assert got == {name: (boost if name == favoured else 0.0) for name in ("s1.jsonl", "s2.jsonl")}
    assert signals(question, chats, role_boost=0.0) == {"s1.jsonl": 0.0, "s2.jsonl": 0.0}


def test_a_question_naming_no_role_favours_neither(chats):
    assert signals("Summer Drive playlist songs", chats) == {"s1.jsonl": 0.0, "s2.jsonl": 0.0}


def test_a_request_for_advice_finds_what_the_user_said_about_its_topic(tmp_path):
    # An earlier request shares the new one's frame ("can you recommend some"); the user's own
    # words about the topic share only the topic.
    root, lance_uri = tmp_path / "agents", str(tmp_path / "lancedb")
    write(root, "bot/sessions/kim/s1.jsonl", turn_lines(
        ("user", "Can you recommend some good history books for a beginner?", "2026-11-02T09:00:00Z", "t1")))
    write(root, "bot/sessions/kim/s2.jsonl", turn_lines(
        ("user", "My commute to work is forty minutes by train, and I read on it.", "2026-11-03T09:00:00Z", "t1")))
    ingest(root, lance_uri)
    question = "Can you recommend some things to do on my commute to work?"

    def scores(**recall):
        results = search(question, "bot", "kim", store=lance_uri, settings=recall_settings(root, lance_uri, **recall),
                         min_score=0, k=10)
        return {r.path.rsplit("/", 1)[-1]: r.score for r in results}

    topic, framed = scores(), scores(request_frame=True)
    assert topic["s2.jsonl"] > topic["s1.jsonl"]
    assert framed["s1.jsonl"] - framed["s2.jsonl"] > topic["s1.jsonl"] - topic["s2.jsonl"]
