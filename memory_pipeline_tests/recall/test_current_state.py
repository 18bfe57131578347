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
from memory_pipeline.recall.search import search
from memory_pipeline.recall.timeline import asked_kind, holds_kind, other_subject
from memory_pipeline_tests.helpers import write
from memory_pipeline_tests.helpers.recall import ingest, recall_settings

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
             "When is the board meeting?", "How much is the rent?", "What car does Lucia drive?", "Tell me about Leeds"]
    assert [asked_kind(q) for q in asked] == ["place", "place", "person", "date", "number", "name", None]
    assert [holds_kind(t, "place") for t in ("I live in Leeds.", "Leeds is lovely.", "i moved house")] == [True, False, False]
    assert [holds_kind(t, "date") for t in ("It moved to 5 December.", "On Tuesdays.", "It moved.")] == [True, True, False]
    assert other_subject("My wife drives a Volvo.", "What car does Rui drive?")
    assert other_subject("Nora's manager is Victor.", "Who is Paul's manager?")
    assert not other_subject("Paul's manager is Irene.", "Who is Paul's manager?")


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
