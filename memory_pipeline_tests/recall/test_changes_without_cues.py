"""Proves: a change told without a cue word, and found by no supersession record, still ranks
first for a question about the present: "Sold the Skoda last month and picked up a used Toyota
Corolla" after "I drive a grey Skoda Octavia" matches "What car does Lucia drive?" less than the
statement it changes, but reads close to it and names a thing of the kind asked for; the older
statement stays, marked ``earlier``. A question about the past keeps the plain ranking.

Real pipeline pieces: the L0 index and consolidation (episodes, supersession) through Dagster,
with all-MiniLM-L6-v2.
"""

from __future__ import annotations

import json

import pytest

from memory_pipeline.recall.search import search
from memory_pipeline.timeline.records import SupersessionStore
from memory_pipeline_tests.helpers import make_resources, write
from memory_pipeline_tests.helpers.consolidation import consolidate
from memory_pipeline_tests.helpers.recall import ingest, recall_settings

pytestmark = pytest.mark.slow


def _session(root, name: str, ts: str, text: str) -> None:
    line = {"role": "user", "content": text, "ts": ts, "turn_id": "t1"}
    write(root, f"bot/sessions/lucia/{name}.jsonl", json.dumps(line) + "\n" + json.dumps({"type": "session.completed", "ts": ts}) + "\n")


@pytest.fixture(scope="module")
def lucia(tmp_path_factory, minilm):
    import dagster as dg

    base = tmp_path_factory.mktemp("cues")
    root, lance = base / "agents", str(base / "lancedb")
    _session(root, "s1", "2026-02-14T17:00:00Z", "I drive a grey Skoda Octavia to work every day.")
    _session(root, "s2", "2026-07-01T17:20:00Z", "Sold the Skoda last month and picked up a used Toyota Corolla hybrid.")
    ingest(root, lance, "minilm")
    instance, resources = dg.DagsterInstance.ephemeral(), make_resources(root, lance, embedder="minilm")
    for day in ("2026-02-14", "2026-07-01"):
        assert consolidate(instance, resources, day, tenant="bot~lucia").success
    settings = recall_settings(root, lance).model_copy(update={"embedder": "minilm"})
    return lance, settings


def ask(lucia, minilm, question: str) -> list:
    lance, settings = lucia
    return search(question, "bot", "lucia", store=lance, embedder=minilm, settings=settings, min_score=0.0)


def test_the_later_car_ranks_first_without_a_record(lucia, minilm):
    assert SupersessionStore(lucia[0]).rows("bot~lucia").height == 0  # nothing detected: read time decides
    results = ask(lucia, minilm, "What car does Lucia drive?")
    first_old = next(n for n, r in enumerate(results) if "Octavia" in r.snippet)
    assert "Corolla" in results[0].snippet and results[0].earlier is None
    assert results[first_old].earlier is not None and results[first_old].earlier.startswith("2026-02-14")


def test_a_question_about_the_past_keeps_the_plain_order(lucia, minilm):
    results = ask(lucia, minilm, "What car did Lucia drive before?")
    assert all(r.earlier is None for r in results)
    assert "Octavia" in results[0].snippet
