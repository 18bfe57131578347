"""``memory-pipeline eval locomo`` end to end on a tiny LoCoMo-format fixture written here.

Each conversation is its own tenant; by default the pipeline's commands run over them as a user
runs them (ingest, typed memories, consolidation, dreaming), ``layers="turns"`` runs the L0
Dagster job alone. Every question gets a ranked line in results.jsonl with the turn ids the scorer
needs, and the printed figures are the ones ``score`` computes. The hashing embedder stands in
for the model, except in the test that runs the command exactly as documented.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memory_pipeline.cli import app as cli_group
from memory_pipeline.eval.locomo import EvalDataError, run_locomo_eval, score

CONVERSATIONS = {
    "conv-a": [
        [("Nora", "I adopted a grey kitten named Pixel last weekend."), ("Omar", "That is lovely, how is Pixel settling in?"),
         ("Nora", "Pixel already sleeps on my keyboard every afternoon."), ("Omar", "Ha, a true programmer cat.")],
        [("Omar", "I finally finished my pottery course at the community studio."), ("Nora", "Congrats! What did you make?"),
         ("Omar", "A blue glazed teapot for my grandmother."), ("Nora", "She will love it.")],
    ],
    "conv-b": [
        [("Ida", "My marathon training plan starts in March."), ("Ben", "Which marathon are you running?"),
         ("Ida", "The Lisbon marathon in October."), ("Ben", "Good luck with the hills.")],
    ],
}
QUERIES = [
    ("conv-a", "What is the name of Nora's kitten?", ["D1:1"], 4),
    ("conv-a", "What did Omar make in his pottery course?", ["D2:3"], 4),
    ("conv-a", "Where does Pixel sleep?", ["D1:3"], 4),
    ("conv-b", "Which marathon is Ida running?", ["D1:3"], 4),
    ("conv-b", "When does Ida's training plan start?", ["D1:1"], 2),
]


def write_fixture(base: Path) -> Path:
    data = base / "locomo"
    for conv, sessions in CONVERSATIONS.items():
        folder = data / "sessions" / conv
        folder.mkdir(parents=True)
        for s, turns in enumerate(sessions, 1):
            lines = [
                json.dumps({"role": r, "content": c, "ts": f"2023-0{s}-1{s}T10:0{i}:00Z", "turn_id": f"D{s}:{i + 1}"})
                for i, (r, c) in enumerate(turns)
            ]
            (folder / f"{conv}_session_{s}.jsonl").write_text("\n".join(lines) + "\n")
    with (data / "queries.jsonl").open("w") as f:
        for i, (conv, question, evidence, category) in enumerate(QUERIES):
            f.write(json.dumps({"question_idx": i, "conversation_id": conv, "question": question, "answer": "",
                                "category": category, "evidence_turn_ids": evidence}) + "\n")
    return data


def test_the_turn_index_alone_runs_the_l0_job_in_process(tmp_path):
    data = write_fixture(tmp_path)
    report = run_locomo_eval(data, tmp_path / "out", embedder="hash", layers="turns")
    lines = [json.loads(x) for x in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert {hit["source"] for line in lines for hit in line["ranked"]} == {"sessions"}
    assert report.table["overall"]["R@10"] == 1.0 and report.timings["ingest_s"] > 0
    assert "RUN_SUCCESS" in (tmp_path / "out" / "ingest.log").read_text()
    with pytest.raises(EvalDataError, match="unknown layers 'graph': use 'all' or 'turns'"):
        run_locomo_eval(data, tmp_path / "out", embedder="hash", layers="graph")


def test_score_counts_first_evidence_rank():
    queries = [{"question_idx": 0, "category": 4, "evidence_turn_ids": ["D1:2"]},
               {"question_idx": 1, "category": 2, "evidence_turn_ids": ["D1:9"]}]
    ranked = {0: [{"turn_ids": ["D1:1"], "text": "a b"}, {"turn_ids": ["D1:2", "D1:3"], "text": "c d e f"}], 1: []}
    table, tokens = score(queries, ranked)
    assert table["overall"] == {"R@1": 0.0, "R@5": 0.5, "R@10": 0.5, "MRR": 0.25, "n": 2}
    assert tokens == 3.0


def test_session_recall_counts_any_turn_of_an_answer_session():
    # LongMemEval names every turn of the sessions holding the answer: a result citing one of
    # them finds the session even where it misses the labelled turn.
    queries = [{"question_idx": 0, "category_name": "single-session-user", "evidence_turn_ids": ["S3:1"],
                "answer_session_turn_ids": ["S3:1", "S3:2"]},
               {"question_idx": 1, "category_name": "single-session-user", "evidence_turn_ids": ["S5:3"],
                "answer_session_turn_ids": ["S5:1", "S5:2", "S5:3"]},
               {"question_idx": 2, "category_name": "multi-session", "evidence_turn_ids": ["S9:1"]}]
    ranked = {0: [{"turn_ids": ["q0:S1:1"], "text": ""}, {"turn_ids": ["q0:S3:2"], "text": ""}],
              1: [{"turn_ids": ["S4:1"], "text": ""}] * 5 + [{"turn_ids": ["S5:1"], "text": ""}],
              2: [{"turn_ids": ["S9:1"], "text": ""}]}
    table, _ = score(queries, ranked)
    assert table["single-session-user"] == {"R@1": 0.0, "R@5": 0.0, "R@10": 0.0, "MRR": 0.0,
                                            "session R@5": 0.5, "session R@10": 1.0, "n": 2}
    # Over the queries that name their sessions; a set without them (LoCoMo) prints none.
    assert table["overall"]["session R@5"] == 0.5 and table["overall"]["R@1"] == 1 / 3
    assert "session R@5" not in table["multi-session"]


def test_missing_data_is_explained(tmp_path):
    with pytest.raises(EvalDataError, match="queries.jsonl"):
        run_locomo_eval(tmp_path, tmp_path / "out", embedder="hash")
    (tmp_path / "queries.jsonl").write_text("")
    with pytest.raises(EvalDataError, match="sessions/"):
        run_locomo_eval(tmp_path, tmp_path / "out", embedder="hash")


@pytest.mark.slow  # the pipeline's commands, each in its own process, with the real model
def test_the_command_as_documented_writes_ranked_results_of_every_layer(tmp_path):
    data = write_fixture(tmp_path)
    result = CliRunner().invoke(cli_group, ["eval", "locomo", "--data", str(data), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "R@5" in result.stdout and "MRR" in result.stdout and "mean result length" in result.stdout
    report = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert report["table"]["overall"]["R@1"] >= 0.6  # distinct topics: the real model finds them
    lines = [json.loads(x) for x in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert [x["question_idx"] for x in lines] == list(range(len(QUERIES)))
    for line, (conv, *_rest) in zip(lines, QUERIES):
        assert 1 <= len(line["ranked"]) <= 10
        for hit in line["ranked"]:
            assert isinstance(hit["score"], float) and hit["text"]
            other = next(c for c in CONVERSATIONS if c != conv)
            assert f"/{other}/" not in hit["citation"], "a conversation only ever sees its own memory"
            if hit["source"] in ("sessions", "episodes"):
                assert hit["turn_ids"] and f"locomo/sessions/{conv}/" in hit["citation"]
    # The layers a user's pipeline builds answer: turns, episodes, the dreamed documents.
    assert {"sessions", "episodes", "memory"} <= {hit["source"] for line in lines for hit in line["ranked"]}
    assert report["layers"] == "all" and report["queries"] == report["table"]["overall"]["n"] == len(QUERIES)
    assert report["table"]["overall"]["R@10"] == 1.0  # every conversation is shorter than 10 results
    assert set(report["table"]) == {"overall", "2 temporal", "4 single-hop"}
    assert report["mean_tokens_per_result"] > 0 and report["mean_turns_cited_per_result"] >= 1
    assert sum(report["first_result_sources"].values()) == len(QUERIES)
    assert report["timings"]["consolidate --all_s"] > 0 and report["timings"]["dream_runs"] == 1
    log = (tmp_path / "out" / "ingest.log").read_text()
    for command in ("ingest --all", "memories ingest --all", "consolidate --all", "dream --force --agent locomo"):
        assert f"$ memory-pipeline {command}" in log


def test_a_question_is_asked_at_its_question_date(tmp_path):
    """The same words said in two months: "last month" picks the one before the question's date."""
    data = tmp_path / "dated"
    folder = data / "sessions" / "conv-d"
    folder.mkdir(parents=True)
    for s, month in ((1, 3), (2, 4)):
        line = {"role": "Nora", "content": "I baked a lemon tart for the neighbours.", "ts": f"2023-0{month}-10T10:00:00Z",
                "turn_id": f"D{s}:1"}
        (folder / f"conv-d_session_{s}.jsonl").write_text(json.dumps(line) + "\n")
    asked = [("2023/04/20 (Thu) 09:00", "D1:1"), ("2023-05-20T09:00:00Z", "D2:1")]
    with (data / "queries.jsonl").open("w") as f:
        for i, (when, evidence) in enumerate(asked):
            f.write(json.dumps({"question_idx": i, "conversation_id": "conv-d", "question": "What did Nora bake last month?",
                                "question_date": when, "category_name": "temporal-reasoning",
                                "evidence_turn_ids": [evidence]}) + "\n")
    report = run_locomo_eval(data, tmp_path / "out", embedder="hash", layers="turns")
    assert report.table["temporal-reasoning"] == {"R@1": 1.0, "R@5": 1.0, "R@10": 1.0, "MRR": 1.0, "n": 2}
    (data / "queries.jsonl").write_text(json.dumps({"conversation_id": "conv-d", "question": "q", "evidence_turn_ids": [],
                                                    "question_date": "the day after"}) + "\n")
    with pytest.raises(EvalDataError, match=r"line 1: .*is not a date"):
        run_locomo_eval(data, tmp_path / "out2", embedder="hash", layers="turns")


def test_after_use_asks_again_once_the_activation_job_has_aged_the_answers_use(tmp_path):
    """``--after-use``: each answer's first result is logged as used, the activation job turns the
    log into activation rows, and the second pass (a table of its own) ranks with them."""
    import lancedb

    data = write_fixture(tmp_path)
    out, work = tmp_path / "out", tmp_path / "work"
    args = ["eval", "locomo", "--data", str(data), "--out", str(out), "--workdir", str(work), "--embedder", "hash",
            "--after-use", "--layers", "turns", "--json"]
    done = CliRunner().invoke(cli_group, args)
    assert done.exit_code == 0, done.output
    report = json.loads(done.stdout)
    assert report["after_use"]["overall"]["n"] == report["table"]["overall"]["n"] == len(QUERIES)
    # Lifting what was used first can only keep each first result first on the same questions.
    assert report["after_use"]["overall"]["R@1"] >= report["table"]["overall"]["R@1"]
    before = [json.loads(x)["ranked"][0]["citation"] for x in (out / "results.jsonl").read_text().splitlines()]
    after = [json.loads(x)["ranked"][0]["citation"] for x in (out / "results_after_use.jsonl").read_text().splitlines()]
    assert after == before
    rows = lancedb.connect(str(work / "lancedb")).open_table("activation").to_arrow().to_pylist()
    assert {r["tenant"] for r in rows} == {"locomo~conv-a", "locomo~conv-b"}
    assert any(r["use_activation"] > 0 for r in rows) and report["timings"]["activation_s"] > 0
