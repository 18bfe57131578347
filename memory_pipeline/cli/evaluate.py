"""``eval locomo`` and ``eval consolidation``: recall and consolidation quality on a LoCoMo-format
set; ``eval updates``: whether the newest statement wins when a fact changed."""

from __future__ import annotations

from pathlib import Path

import typer

from memory_pipeline.cli import options
from memory_pipeline.cli.app import app
from memory_pipeline.cli.output import print_result, say, summary_table

eval_app = typer.Typer(no_args_is_help=True, help="Measure recall and consolidation quality.")
app.add_typer(eval_app, name="eval")

EMBEDDER = typer.Option("minilm", "--embedder", help="minilm (the real model) or hash (plumbing only).")


def _workdir(kept: str):
    return typer.Option(None, "--workdir", help=f"Keep the staged workspace and {kept} here (default: a temp dir).")


def _recall_table(title: str, table: dict) -> None:
    """One row per category, overall last; session R@k beside the turn figures when the set has them."""
    groups = sorted(g for g in table if g != "overall") + ["overall"]
    metrics = ["R@1", "R@5", "R@10", "MRR"] + [m for m in ("session R@5", "session R@10") if m in table["overall"]]
    summary_table(title, ("category", "n", *metrics),
                  [(g, table[g]["n"], *(f"{table[g].get(m, 0.0):.3f}" for m in metrics)) for g in groups])


def _print_locomo(report, data: Path) -> None:
    _recall_table(f"recall on {data} ({report.queries} questions, {len(report.conversations)} conversations)",
                  report.table)
    if report.after_use is not None:
        _recall_table("after a round of use and the activation job (each answer's first result used)", report.after_use)
    say(f"layers: {report.layers}; mean result length: {report.mean_tokens_per_result} tokens, "
        f"{report.mean_turns_cited_per_result} turns cited per result; first results from "
        + ", ".join(f"{source} {n}" for source, n in report.first_result_sources.items()))
    say("timings: " + ", ".join(f"{key} {value}" for key, value in report.timings.items()))
    say(f"results: {report.results} (the commands' output: {report.results.parent / 'ingest.log'})")


@eval_app.command("locomo")
def eval_locomo_command(
    data: Path = typer.Option(..., "--data", help="Folder with sessions/<conversation>/*.jsonl and queries.jsonl."),
    out: Path = typer.Option(..., "--out", help="Folder for results.jsonl and summary.json."),
    limit: int = options.limit(10, "Results per question."),
    embedder: str = EMBEDDER,
    workdir: Path = _workdir("index"),
    after_use: bool = typer.Option(
        False, "--after-use",
        help="Then log each answer as used (its first result), run the activation job and ask every question again.",
    ),
    layers: str = typer.Option(
        "all", "--layers",
        help="all: run ingest, memories ingest, consolidate and dream as a user does, and search every layer; "
        "turns: only the L0 index job (the turn index alone).",
    ),
    as_json: bool = options.JSON,
) -> None:
    """Run the pipeline on a LoCoMo-format set as a user runs it, answer every question, print R@k and MRR."""
    from memory_pipeline.eval.locomo import run_locomo_eval

    report = run_locomo_eval(data, out, k=limit, embedder=embedder, workdir=workdir, after_use=after_use, layers=layers)
    print_result(report.to_dict(), as_json, lambda: _print_locomo(report, data))


def _print_consolidation(report, data: Path, out: Path) -> None:
    scores = report.scores or {}
    coverage = scores.get("coverage", {})
    summary_table(
        f"consolidation of {data} ({report.sessions} sessions, {len(report.conversations)} conversations)",
        ("kind", "units", "coverage @0.6", "names its subject"),
        [(kind, n, coverage.get(kind, {}).get("@0.6", ""), report.named_subject.get(kind, ""))
         for kind, n in sorted(report.counts.items())] + [("all", sum(report.counts.values()), coverage.get("all", {}).get("@0.6", ""), "")],
    )
    if "summary_unigram_f1" in scores:
        say(f"summary unigram F1 {scores['summary_unigram_f1']} (lead baseline {scores.get('summary_lead_baseline_f1')})")
    say(f"relations per session {report.relations_per_session}; entities {len(report.entities)}")
    say("commands: " + ", ".join(f"{command.removesuffix('_s')} {seconds} s" for command, seconds in report.timings.items())
        + f" ({report.dream_runs} dreaming runs; output in {out / 'pipeline.log'})")
    say(f"units: {report.units} (scores: {out / 'scores.json'})" if report.scores else f"units: {report.units} (no scorer found)")


@eval_app.command("consolidation")
def eval_consolidation_command(
    data: Path = typer.Option(..., "--data", help="Folder with sessions/<conversation>/*.jsonl and the gold files."),
    out: Path = typer.Option(..., "--out", help="Folder for units.jsonl, entities.jsonl, scores.json and summary.json."),
    embedder: str = EMBEDDER,
    workdir: Path = _workdir("tables"),
    scorer: Path = typer.Option(None, "--scorer", help="score_consolidation.py (default: beside the data folder)."),
    as_json: bool = options.JSON,
) -> None:
    """Run the pipeline's commands on a LoCoMo-format set (ingest, memories ingest, consolidate, then
    dream until every episode is promoted) and score what episodes, graph, typed memories and
    dreaming kept."""
    from memory_pipeline.eval.consolidation import run_consolidation_eval

    report = run_consolidation_eval(data, out, embedder=embedder, workdir=workdir, scorer=scorer)
    print_result(report.to_dict(), as_json, lambda: _print_consolidation(report, data, out))


def _print_updates(s: dict | None, p: dict | None, out: Path) -> None:
    if s:
        say(f"{s['scenarios']} scenarios: {s['changed']} changed facts, {s['lookalikes']} look-alikes; "
            "after ingest -> after memories ingest, consolidate and dream")

        def num(value) -> str:
            return "-" if value is None else f"{value:.3f}"

        summary_table(
            "knowledge updates through the pipeline", ("set", "changed", "newer-first", "new@1", "detected", "default search finds"),
            [(name, f["changed"] if name != "all" else s["changed"],
              f"{num(f['newer_first']['before'])} -> {num(f['newer_first']['after'])}",
              f"{num(f['new_at_1']['before'])} -> {num(f['new_at_1']['after'])}", num(f["detected"]), num(f["default_found"]))
             for name, f in [("all", s), *s["by_kind"].items()]],
        )
        say(f"false supersessions in look-alikes: {s['false_supersessions']}")
        missed = [r["id"] for r in s["per_scenario"] if r["changed"] and not r["after"]["newer_first"]]
        say(f"newer-first missed: {', '.join(missed) or 'none'}; details: {out / 'summary.json'}")
    if p:
        say(f"precision on {', '.join(p['sources'])}: {p['precision']} ({p['correct']} correct, {p['wrong']} wrong, "
            f"{p['unlabelled']} unlabelled of {p['records']} records; details: {out / 'precision.json'})")


@eval_app.command("updates")
def eval_updates_command(
    data: Path = typer.Option(None, "--data", help="Folder with scenarios.yaml (default bench/knowledge_updates)."),
    out: Path = typer.Option(Path("/tmp/eval-updates"), "--out", help="Folder for summary.json and pipeline.log."),
    precision: list[Path] = typer.Option(
        [], "--precision",
        help="Also score supersession's precision on this workspace root or LoCoMo-format folder against "
             "bench/knowledge_updates/precision_labels.json (repeatable).",
    ),
    scenarios: bool = typer.Option(True, "--scenarios/--no-scenarios", help="Run the knowledge-update scenarios."),
    longmemeval: Path = typer.Option(
        None, "--longmemeval", help="Also run the knowledge-update questions of this LongMemEval-format folder "
        "(e.g. ../shared/eval/longmemeval-dev) through the pipeline and print their R@1.",
    ),
    embedder: str = EMBEDDER,
    as_json: bool = options.JSON,
) -> None:
    """Knowledge updates through ingest, memories ingest and consolidate: newer-first and new@1 after
    ingest and after the whole pipeline, false supersessions, and precision on realistic memories
    (``--precision``)."""
    from memory_pipeline.eval.updates import DEFAULT_DATA, run_longmemeval_updates, run_precision_eval, run_updates_eval

    s = run_updates_eval(data or DEFAULT_DATA, out, embedder=embedder) if scenarios else None
    p = run_precision_eval(precision, out, embedder=embedder) if precision else None
    lme = run_longmemeval_updates(longmemeval, out, embedder=embedder) if longmemeval else None
    value = {k: v for k, v in (s or {}).items() if k != "per_scenario"}
    if p:
        value["precision"] = {k: v for k, v in p.items() if not k.endswith("_records")}
    if lme:
        value["longmemeval"] = {k: v for k, v in lme.items() if k != "per_question"}

    def show() -> None:
        _print_updates(s, p, out)
        if lme:
            say(f"LongMemEval knowledge updates ({lme['questions']} questions): R@1 {lme['R@1']:.3f}, MRR {lme['MRR']:.3f}, "
                f"newest evidence first {lme['newest_at_1']:.3f}; details: {out / 'longmemeval.json'}")

    print_result(value, as_json, show)
