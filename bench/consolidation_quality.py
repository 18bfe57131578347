"""What consolidation keeps of LoCoMo's dev conversations, against the issue's targets.

    python bench/consolidation_quality.py --data ../shared/eval/locomo-dev [--out /tmp/cq]
    python bench/consolidation_quality.py --data ../shared/eval/locomo-dev --out /tmp/cq --reuse \
        --locomo-summary /tmp/c-locomo/summary.json    # recall of `eval locomo` on the same tree, beside

Runs ``memory-pipeline eval consolidation`` (its library function, which runs the pipeline's
commands, each in its own process) on the data folder, unless
``--reuse`` reads the units, entities and scores an earlier run left in ``--out``; then checks
the relations and entities against the hand labels in ``bench/consolidation_labels.json`` (a
sample of relations judged correct or not, every entity judged a name or junk) and writes
``bench/results/consolidation_quality.json``, from which ``bench/report.py`` draws its README
section. The units stay in ``--out``: they are derived from the dataset, which is never copied
into the repository.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
LABELS = HERE / "consolidation_labels.json"
RESULT = HERE / "results" / "consolidation_quality.json"


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def judge(units: list[dict], entities: list[dict], labels: dict) -> dict:
    """Precision of the labelled relations still produced, and the share of junk entities."""
    produced = {(u["conversation_id"], u["session"], u["text"]) for u in units if u["kind"] == "relation"}

    def still_produced(sample: list[dict]) -> list[dict]:
        return [r for r in sample if (r["conversation_id"], r["session"], r["text"]) in produced]

    sample = still_produced(labels["relations"])
    correct = sum(1 for r in sample if r["correct"])
    independent = still_produced(labels.get("relations_independent", []))
    judged = {(e["conversation_id"], e["name"]): e["junk"] for e in labels["entities"]}
    found = [(e["conversation_id"], e["name"]) for e in entities]
    junk = [name for key in found if judged.get(key) for name in [key[1]]]
    return {
        "relations_labelled": len(labels["relations"]),
        "relations_labelled_still_produced": len(sample),
        "relations_correct": correct,
        "relation_precision": round(correct / len(sample), 3) if sample else None,
        # Labels by an annotator who saw only each relation and its turn (``relations_independent``).
        "independent_labelled_still_produced": len(independent),
        "independent_of_produced": len(produced),
        "independent_precision": (
            round(sum(r["correct"] for r in independent) / len(independent), 4) if independent else None
        ),
        "entities": len(found),
        "entities_unlabelled": sorted(k[1] for k in found if k not in judged),
        "entities_junk": sorted(junk),
        "junk_entity_share": round(len(junk) / len(found), 3) if found else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="LoCoMo-format folder with the gold files")
    parser.add_argument("--out", default="/tmp/consolidation-quality", help="folder for units.jsonl and scores")
    parser.add_argument("--reuse", action="store_true", help="judge the units already in --out")
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--locomo-summary", help="summary.json of an `eval locomo` run on the same tree, to report beside")
    opts = parser.parse_args(argv)
    out = Path(opts.out)
    load_start = os.getloadavg()
    started = time.perf_counter()
    if not opts.reuse:
        from memory_pipeline.eval.consolidation import run_consolidation_eval

        run_consolidation_eval(Path(opts.data), out, embedder=opts.embedder)
    summary = json.loads((out / "summary.json").read_text())
    run = {
        "finished": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "seconds": round(time.perf_counter() - started, 1),
        "load_average_at_start": list(load_start),
        "load_average_at_end": list(os.getloadavg()),
    }
    if opts.reuse and RESULT.exists():  # judging again: the run that made the units keeps its figures
        before = json.loads(RESULT.read_text())
        run = {key: before.get(key, value) for key, value in run.items()}
    result = {
        "command": f"python bench/consolidation_quality.py --data {opts.data}",
        **run,
        "summary": summary,
        "labels": judge(lines(out / "units.jsonl"), lines(out / "entities.jsonl"), json.loads(LABELS.read_text())),
    }
    if opts.locomo_summary:
        table = json.loads(Path(opts.locomo_summary).read_text())["table"]["overall"]
        result["locomo_recall"] = {k: round(table[k], 3) for k in ("R@1", "R@5", "R@10", "MRR")}
        result["locomo_command"] = "memory-pipeline eval locomo --data ../shared/eval/locomo-dev --out OUT"
    RESULT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["labels"], indent=1))
    print(f"wrote {RESULT}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))
    raise SystemExit(main())
