"""Redactions on text that holds no secret: the sample workspace and the development sets.

Every note (``*.md``) and every message of every transcript (``*.jsonl``, the ``content`` field)
under the given folders goes through ``scrub_secrets``; each redaction there is a false positive.
Prints the count by type and, for each, the text around it, so a person can judge it.

    python bench/scrub_false_positives.py data/agents /work/shared/eval/locomo-dev \
        /work/shared/eval/longmemeval-dev
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections import Counter
from pathlib import Path

from memory_pipeline.text.scrub import scrub_secrets

_PLACEHOLDER_RE = re.compile(r"\[REDACTED:([a-z0-9_]+)\]")


def texts(folder: Path):
    """(where, text) of every note and transcript message under ``folder``."""
    for path in sorted(folder.rglob("*")):
        if path.suffix == ".md":
            yield str(path), path.read_text(encoding="utf-8", errors="replace")
        elif path.suffix == ".jsonl" and path.name != "queries.jsonl":
            for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict) and isinstance(record.get("content"), str):
                    yield f"{path}:{n}", record["content"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--show", type=int, default=40, help="redactions to print with their context")
    args = parser.parse_args()
    counts: Counter[str] = Counter()
    shown, seen, chars = 0, 0, 0
    started = time.perf_counter()
    for folder in args.folders:
        for where, text in texts(folder):
            seen += 1
            chars += len(text)
            result = scrub_secrets(text)
            if not result.counts:
                continue
            counts.update(result.counts)
            for match in _PLACEHOLDER_RE.finditer(result.text):
                if shown < args.show:
                    shown += 1
                    context = result.text[max(0, match.start() - 80) : match.end() + 40].replace("\n", " ")
                    print(f"{where}: ...{context}...")
    seconds = time.perf_counter() - started
    print(f"{seen} texts, {chars:,} characters, {seconds:.1f} s")
    print(f"redactions: {sum(counts.values())} {dict(counts.most_common())}")


if __name__ == "__main__":
    main()
