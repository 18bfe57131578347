"""Proves: for a question about the present, the newest statement answering it ranks first even
when no supersession record exists, and the older one stays, marked ``earlier`` with its date; a
question about the past keeps the plain ranking; a statement about someone else (a relative,
another person's possession) is not taken for a newer answer; and decay orders dated notes without
hiding an old one that nothing replaced.

The workspace is ingested through the real L0 Dagster job with the hashing embedder; no
consolidation runs, so nothing but read-time ranking decides the order.
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

from memory_pipeline.embedding import HashEmbedder
from memory_pipeline.recall.answers import asked_kind, holds_kind, other_subject
from memory_pipeline.recall.query import understand
from memory_pipeline.recall.results import Candidate
from memory_pipeline.recall.search import search
from memory_pipeline.recall.timeline import current_first
from memory_pipeline_tests.helpers import write
from memory_pipeline_tests.helpers.recall import RankedRows, ingest, recall_settings

NOW = date(2026, 11, 26)


def _session(root: Path, user: str, name: str, ts: str, text: str) -> None:
    line = {"role": "user", "content": text, "ts": ts, "turn_id": "t1"}
    done = {"type": "session.completed", "ts": ts}
    write(root, f"bot/sessions/{user}/{name}.jsonl", json.dumps(line) + "\n" + json.dumps(done) + "\n")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    base = tmp_path_factory.mktemp("current")
    root, lance = base / "agents", str(base / "lancedb")
    _session(root, "dana", "s1", "2026-03-02T09:00:00Z", "I live in York with my cats.")
    _session(root, "dana", "s2", "2026-08-20T09:00:00Z", "I live in Leeds with my cat.")
    # A profile line kept by hand: its file is written now, after the session that changed it.
    write(root, "bot/users/ines/MEMORY.md", "# Ines\n\n- I live in York with my cats.\n")
    _session(root, "ines", "s1", "2026-08-20T09:00:00Z", "I live in Leeds with my cat.")
    _session(root, "rui", "s1", "2026-03-05T18:00:00Z", "I drive a Mazda to work.")
    _session(root, "rui", "s2", "2026-08-12T18:00:00Z", "My wife can drive a Volvo to work.")
    write(root, "bot/users/bram/memory/2026-01-10.md", "- I am allergic to penicillin.\n")
    write(root, "bot/users/bram/memory/2026-11-20.md", "- Bought new running shoes for the race.\n")
    ingest(root, lance)
    return root, lance


def ask(workspace, user: str, query: str, **kw) -> list:
    return search(query, "bot", user, store=workspace[1], embedder=HashEmbedder(), now=NOW,
                  settings=recall_settings(*workspace), **kw)


def test_the_kind_of_value_a_question_asks_for():
    asked = ["Which city does Dana live in now?", "Where is the warehouse?", "Who is Ken's boss?",
             "When is the board meeting?", "How much is the rent?", "What car does Lucia drive?",
             "What is Ines's job title?", "How does Ola get to work?", "How does Ola feel about it?", "What is it?",
             "Tell me about Leeds"]
    assert [asked_kind(q) for q in asked] == [
        "place", "place", "person", "date", "number", "attribute", "attribute", "attribute", None, None, None]
    assert holds_kind("They made me head of the desk.", "attribute")  # a title needs no name or number
    assert [holds_kind(t, "place") for t in ("I live in Leeds.", "Leeds is lovely.", "i moved house")] == [True, False, False]
    assert [holds_kind(t, "date") for t in ("It moved to 5 December.", "On Tuesdays.", "It moved.")] == [True, True, False]
    assert [holds_kind(t, "number") for t in ("I need 120 stars.", "We have two dogs.", "How many stars?")] == [
        True, True, False]
    assert other_subject("My wife drives a Volvo.", "What car does Rui drive?")
    assert other_subject("Nora's manager is Victor.", "Who is Paul's manager?")
    assert not other_subject("Paul's manager is Irene.", "Who is Paul's manager?")


def test_an_undated_profile_line_counts_as_older_than_every_dated_statement(workspace):
    """Its file's time says when the file was last edited, not when the line was true: it is shown
    with no time, below the session that changed it and marked earlier."""
    results = ask(workspace, "ines", "Which city do I live in?", min_score=0.0)
    assert [(r.snippet.split(": ", 1)[-1].removeprefix("# Ines\n\n- "), r.when, r.earlier) for r in results[:2]] == [
        ("I live in Leeds with my cat.", "2026-08-20 09:00 UTC", None),
        ("I live in York with my cats.", None, "undated"),
    ]


def test_the_newest_answer_ranks_first_and_the_older_is_marked_earlier(workspace):
    results = ask(workspace, "dana", "Which city do I live in?", min_score=0.0)
    assert [(r.snippet.split(": ", 1)[-1], r.earlier) for r in results[:2]] == [
        ("I live in Leeds with my cat.", None),
        ("I live in York with my cats.", "2026-03-02 09:00 UTC"),
    ]
    assert results[0].score >= results[1].score


def test_a_question_about_the_past_keeps_the_plain_ranking(workspace):
    plain = ask(workspace, "dana", "Which city did I live in?", min_score=0.0)
    assert [r.earlier for r in plain] == [None] * len(plain)
    assert "York" in plain[0].snippet  # the better match, though older


def test_a_statement_about_someone_else_is_no_newer_answer(workspace):
    results = ask(workspace, "rui", "What car do I drive?", min_score=0.0)
    assert "Mazda" in results[0].snippet and results[0].earlier is None


def test_decay_orders_an_old_note_but_a_default_search_still_finds_it(workspace):
    results = ask(workspace, "bram", "Which medicine am I allergic to?")
    found = [r for r in results if "penicillin" in r.snippet]
    assert found and found[0].parts["decay"] < 0.01  # ten months old: decayed, still returned


def test_a_turn_is_measured_against_turns_not_against_a_restatement_in_the_third_person():
    # The typed memory restating the old turn matches the question far better than any turn: the
    # changed turn is a third as relevant as it, but two thirds as relevant as the old turn.
    facts = RankedRows("facts", ["Ada's rent is 900 euros a month."], [[1.0, 0.1, 0.0]])
    turns = RankedRows("sessions", ["My rent is 900 euros a month.", "The new lease came: 990 euros a month."],
                       [[0.9, 0.3, 0.1], [0.6, 0.2, 0.7]])
    made = [
        Candidate(None, facts, 0, 0.0, 0.0, relevance=0.85, bonus=0.0, decay=1.0, score=0.85, when="2026-03-01"),
        Candidate(None, turns, 0, 0.0, 0.0, relevance=0.44, bonus=0.0, decay=1.0, score=0.44, when="2026-03-01 12:00 UTC"),
        Candidate(None, turns, 1, 0.0, 0.0, relevance=0.29, bonus=0.0, decay=1.0, score=0.29, when="2026-09-15 12:00 UTC"),
    ]
    ranked = current_first(list(made), understand("How much is Ada's rent?", NOW))
    assert [c.rows.content(c.row) for c in ranked][0] == "The new lease came: 990 euros a month."
    assert [c.score for c in ranked] == sorted((c.score for c in ranked), reverse=True)
    assert {c.earlier for c in ranked[1:]} == {"2026-03-01", "2026-03-01 12:00 UTC"}


def test_a_first_candidate_stating_no_number_yields_to_the_newest_that_states_one():
    # The question asked again in an earlier chat matches best, but states no number; nor does
    # the episode's date make it an answer.
    turns = RankedRows("sessions", ["How many stars do I need for gold?", "Gold takes 300 stars, I think.",
                                    "Actually, I need 120 stars for gold, not 300."],
                       [[1.0, 0.1, 0.0], [0.8, 0.3, 0.1], [0.7, 0.2, 0.3]])
    episode = RankedRows("episodes", ["On 3 May 2026 the user asked about reward tiers."], [[0.9, 0.2, 0.0]])
    made = [
        Candidate(None, turns, 0, 0.0, 0.0, relevance=0.90, bonus=0.0, decay=1.0, score=0.90, when="2026-05-03 10:00 UTC"),
        Candidate(None, episode, 0, 0.0, 0.0, relevance=0.80, bonus=0.0, decay=1.0, score=0.80, when="2026-09-01"),
        Candidate(None, turns, 1, 0.0, 0.0, relevance=0.75, bonus=0.0, decay=1.0, score=0.75, when="2026-05-03 10:01 UTC"),
        Candidate(None, turns, 2, 0.0, 0.0, relevance=0.60, bonus=0.0, decay=1.0, score=0.60, when="2026-08-20 09:00 UTC"),
    ]
    ranked = current_first(list(made), understand("How many stars do I need to reach gold?", NOW))
    assert [c.rows.content(c.row) for c in ranked] == [
        "Actually, I need 120 stars for gold, not 300.", "On 3 May 2026 the user asked about reward tiers.",
        "Gold takes 300 stars, I think.", "How many stars do I need for gold?"]
    assert [c.score for c in ranked] == [0.90, 0.80, 0.75, 0.60]
    assert ranked[0].kept_score >= 0.90
    # A first candidate stating the number in words keeps its place before an older one in digits.
    said = RankedRows("sessions", ["We have two dogs at home.", "We had 3 dogs."], [[1.0, 0.0, 0.0], [0.9, 0.1, 0.0]])
    made = [
        Candidate(None, said, 0, 0.0, 0.0, relevance=0.9, bonus=0.0, decay=1.0, score=0.9, when="2026-02-01 10:00 UTC"),
        Candidate(None, said, 1, 0.0, 0.0, relevance=0.5, bonus=0.0, decay=1.0, score=0.5, when="2026-01-01 10:00 UTC"),
    ]
    first = current_first(list(made), understand("How many dogs do we have?", NOW))[0]
    assert first.rows.content(first.row) == "We have two dogs at home."


def test_the_newest_answer_is_kept_whenever_an_older_one_is():
    # Dated notes: the change matches the question less well than the fact it changed, and a
    # default search's minimum (held to the score before decay) would keep only the older one.
    notes = RankedRows("memory", ["- The portal is hosted on Heroku.", "- The portal moved off Heroku to Fly.io."],
                       [[1.0, 0.1, 0.0], [0.7, 0.2, 0.4]])
    made = [
        Candidate(None, notes, 0, 0.0, 0.0, relevance=0.70, bonus=0.0, decay=0.05, score=0.035, when="2026-02-20"),
        Candidate(None, notes, 1, 0.0, 0.0, relevance=0.30, bonus=0.0, decay=0.2, score=0.06, when="2026-09-14"),
    ]
    ranked = current_first(list(made), understand("Where is the portal hosted?", NOW))
    assert "Fly.io" in ranked[0].rows.content(ranked[0].row)
    assert min(c.kept_score for c in ranked) >= 0.35
