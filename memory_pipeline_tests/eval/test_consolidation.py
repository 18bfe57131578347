"""Proves: ``eval consolidation`` runs the pipeline's commands (ingest, typed memories,
consolidation, dreaming until every episode is promoted) over a LoCoMo-format folder and writes
every kind of unit the scorer reads, each with its conversation and session; typed memories and
dreamed lines of named speakers all name one of them. The hashing embedder stands in for the model
(the units' text does not depend on it); spaCy is real."""

import json

import pytest

from memory_pipeline.eval.consolidation import run_consolidation_eval
from memory_pipeline.eval.locomo import EvalDataError

SESSIONS = {
    1: [("Gina", "Hey Jon! Anything new?"),
        ("Jon", "I lost my job as a banker yesterday, so I'm starting a dance studio."),
        ("Gina", "I opened an online clothing store last week and I love contemporary dance.")],
    2: [("Jon", "I joined a climbing gym in Rome last month and I adopted a puppy."),
        ("Gina", "Great! I decided to hire two designers for my clothing store."),
        ("Jon", "My dance studio opens in March.")],
    # Short sessions after them: more episodes than one dreaming run promotes.
    **{n: [("Gina", f"How was week {n} of the studio?"), ("Jon", f"Week {n} went well, {n} new students joined.")]
       for n in range(3, 12)},
}


def write_set(folder):
    conv = folder / "sessions" / "conv-9"
    conv.mkdir(parents=True)
    for n, turns in SESSIONS.items():
        rows = [{"role": r, "content": c, "ts": f"2023-{n:02d}-10T10:0{i}:00Z", "turn_id": f"D{n}:{i + 1}"}
                for i, (r, c) in enumerate(turns)]
        (conv / f"conv-9_session_{n}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.mark.slow  # the pipeline's commands, each in its own process
def test_units_of_every_kind_name_their_subject(tmp_path, nlp):
    write_set(tmp_path / "data")
    report = run_consolidation_eval(tmp_path / "data", tmp_path / "out", embedder="hash", scorer=tmp_path / "none.py")
    units = [json.loads(line) for line in report.units.read_text().splitlines()]
    assert units
    assert {u["kind"] for u in units} == {"episode", "summary", "relation", "memory", "dream"}
    assert {u["session"] for u in units} >= {"conv-9_session_1", "conv-9_session_2"}
    assert {u["session"] for u in units if u["kind"] == "episode"} == {f"conv-9_session_{n}" for n in SESSIONS}
    assert {u["conversation_id"] for u in units} == {"conv-9"}
    assert report.named_subject["memory"] == 1.0 and report.named_subject["dream"] == 1.0
    relations = {u["text"] for u in units if u["kind"] == "relation"}
    assert {"Jon joined climbing gym", "Jon has pet puppy", "Gina opened online clothing store"} <= relations
    assert report.scores is None and report.sessions == len(SESSIONS)
    log = (tmp_path / "out" / "pipeline.log").read_text()
    commands = ("ingest --all", "memories ingest --all", "consolidate --all", "dream --all",
                "dream --force --agent locomo --user conv-9")
    assert [line.removeprefix("$ memory-pipeline ") for line in log.splitlines() if line.startswith("$ ")] == list(commands)
    # 11 episodes: a dreaming run promotes at most 10, so one forced run promotes the last.
    assert report.dream_runs == 1


def test_a_folder_without_sessions_is_a_clear_error(tmp_path):
    with pytest.raises(EvalDataError, match="no sessions/ folder"):
        run_consolidation_eval(tmp_path, tmp_path / "out", embedder="hash")


def test_an_unknown_embedder_is_a_clear_error_before_anything_runs(tmp_path):
    write_set(tmp_path / "data")
    with pytest.raises(EvalDataError, match="unknown embedder 'bogus': use 'minilm' or 'hash'"):
        run_consolidation_eval(tmp_path / "data", tmp_path / "out", embedder="bogus")
    assert not (tmp_path / "out" / "pipeline.log").exists()
