"""Activation benchmark: the same facts asked about for a simulated week; do used memories win
their near-ties afterwards, and does anything else move?

A synthetic tenant holds, for each of ``--topics`` facts, two notes that state it in other words
(equally relevant: their scores are within a few percent) and filler notes. Every simulated day
each fact is asked in two phrasings; recall's results are logged as returned, and the agent reads
one of the two notes (chosen at random per fact, once) with ``get``, logged as used. After the
week the nightly activation runs (``activation/pipeline.py``) and the questions are asked again.

Figures, all measured in this run:
- near-ties won: among facts whose two notes score within ``MAX_LIFT`` of each other (the score
  recall orders by, ``parts["ranked"]``, not the reported one, which stops at 1.0), the share
  where the used note ranks above the unused one, before the week (chance) and after (target >= 0.90);
- flips outside near-ties: pairs whose order changed although their scores are further apart
  (target 0: activation never lifts a less relevant result past a clearly better one);
- top-1 relevant: the share of questions whose first result is one of the fact's two notes, before
  and after (must not drop);
- search time with activation / without (p50 ratio, same queries, same process).

    python bench/activation.py                 # hashing embedder, 60 facts
    python bench/activation.py --embedder minilm --topics 120
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import dagster as dg  # noqa: E402

from memory_pipeline.activation.access_log import record_access  # noqa: E402
from memory_pipeline.activation.pipeline import tenant_activation  # noqa: E402
from memory_pipeline.activation.ranking import MAX_LIFT  # noqa: E402
from memory_pipeline.config import Settings  # noqa: E402
from memory_pipeline.embedding import make_embedder  # noqa: E402
from memory_pipeline.l0.assets import l0_assets, l0_index_job  # noqa: E402
from memory_pipeline.orchestration.io_manager import PartitionedPickleIOManager  # noqa: E402
from memory_pipeline.orchestration.resources import EmbedderResource, LanceDBResource, WorkspaceResource  # noqa: E402
from memory_pipeline.orchestration.runs import run_partitioned_job  # noqa: E402
from memory_pipeline.recall.get import get  # noqa: E402
from memory_pipeline.recall.search import search  # noqa: E402

AGENT, USER = "bench-bot", "dana"
TENANT = f"{AGENT}~{USER}"
TEAMS = ["Atlas", "Borealis", "Cinder", "Delta", "Ember", "Fjord", "Granite", "Harbor", "Iris", "Juniper", "Kestrel",
         "Lumen", "Meadow", "Nimbus", "Onyx", "Pioneer", "Quartz", "Raven", "Summit", "Tundra"]
THINGS = ["release day", "on-call rotation", "staging region", "deploy window", "budget owner", "design reviewer"]
VALUES = ["Tuesday", "weekly", "eu-west-2", "after 18:00", "Priya", "Marco", "Thursday", "monthly", "us-east-1", "Keiko"]


def build_workspace(root: Path, topics: int, rng: random.Random) -> list[dict]:
    facts = []
    folder = root / AGENT / "users" / USER / "memory"
    folder.mkdir(parents=True)
    for i in range(topics):
        team, thing, value = TEAMS[i % len(TEAMS)], THINGS[(i // len(TEAMS)) % len(THINGS)], rng.choice(VALUES)
        team = f"{team}-{i // (len(TEAMS) * len(THINGS))}" if i >= len(TEAMS) * len(THINGS) else team
        a, b = f"facts-a-{i:03d}.md", f"facts-b-{i:03d}.md"
        # Equally relevant: the same words but one, which no question asks about.
        (folder / a).write_text(f"# {team}\n\nThe {thing} of the {team} team is {value}, as agreed.\n")
        (folder / b).write_text(f"# {team}\n\nThe {thing} of the {team} team is {value}, as decided.\n")
        (folder / f"filler-{i:03d}.md").write_text(f"# Log {i}\n\nThe {team} team met to talk about hiring and snacks.\n")
        facts.append({"questions": [f"What is the {thing} of the {team} team?", f"{team} team {thing}?"],
                      "notes": (a, b), "used": rng.choice((a, b))})
    return facts


def ingest(root: Path, uri: str, embedder: str) -> None:
    defs = dg.Definitions(assets=l0_assets, jobs=[l0_index_job], resources={
        "io_manager": PartitionedPickleIOManager(base_dir=str(Path(uri).parent / "io")),
        "workspace": WorkspaceResource(root=str(root)), "lancedb": LanceDBResource(uri=uri),
        "embedder": EmbedderResource(kind=embedder)})
    assert run_partitioned_job(defs, "l0_index_job", dg.DagsterInstance.ephemeral(), [TENANT]).success


def ask(facts, settings, embedder) -> tuple[dict, list[float]]:
    """Per (fact, question): {note file: (rank, score)}, the first result's file; and the times."""
    out, times = {}, []
    for f, fact in enumerate(facts):
        for q, question in enumerate(fact["questions"]):
            started = time.perf_counter()
            results = search(question, AGENT, USER, settings=settings, embedder=embedder, k=10, min_score=0.0)
            times.append(time.perf_counter() - started)
            # The score recall orders by: the reported score stops at 1.0, so two notes shown as 1.0
            # may be further apart than a near-tie.
            ranks = {r.path.rsplit("/", 1)[1]: (i, r.parts["ranked"], r) for i, r in enumerate(results)}
            out[(f, q)] = (ranks, results[0].path.rsplit("/", 1)[1] if results else None)
    return out, times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=60)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--embedder", default="hash")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="activation-bench-") as tmp:
        root, uri = Path(tmp) / "agents", str(Path(tmp) / "lancedb")
        facts = build_workspace(root, args.topics, rng)
        ingest(root, uri, args.embedder)
        settings = Settings(root=str(root), lancedb_uri=uri, embedder=args.embedder)
        embedder = make_embedder(args.embedder)
        before, before_times = ask(facts, settings, embedder)

        now = datetime.now(UTC)
        for day in range(args.days, 0, -1):
            at = now - timedelta(days=day - 1, hours=1)
            returned, used = [], []
            for f, fact in enumerate(facts):
                for question in fact["questions"]:
                    returned += search(question, AGENT, USER, settings=settings, embedder=embedder, k=6, min_score=0.0)
                    cite = f"{AGENT}/users/{USER}/memory/{fact['used']}#L3"
                    used.append(get(cite, agent=AGENT, user=USER, settings=settings))
            record_access(uri, "bench", returned=returned, used=used, now=at)
        aged = tenant_activation(uri, TENANT, now)
        after, after_times = ask(facts, settings, embedder)

    near = won_before = won_after = flips = top_before = top_after = 0
    pairs = 0
    for (f, q), (ranks, top) in before.items():
        fact = facts[f]
        a, b = fact["notes"]
        unused = b if fact["used"] == a else a
        top_before += top in (a, b)
        top_after += after[(f, q)][1] in (a, b)
        if fact["used"] not in ranks or unused not in ranks:
            continue
        pairs += 1
        (ru, su, _), (rn, sn, _) = ranks[fact["used"]], ranks[unused]
        au, an = after[(f, q)][0].get(fact["used"]), after[(f, q)][0].get(unused)
        if au is None or an is None:
            continue
        if abs(su - sn) <= MAX_LIFT * max(su, sn):
            near += 1
            won_before += ru < rn
            won_after += au[0] < an[0]
        else:
            flips += (ru < rn) != (au[0] < an[0])
    asked = len(before)
    p50_before, p50_after = statistics.median(before_times), statistics.median(after_times)
    print(f"facts {args.topics}, questions {asked}, days {args.days}, embedder {args.embedder}; tiers after the "
          f"week: {aged.tiers} from {aged.events} events")
    print(f"pairs of notes both returned: {pairs}; near-ties (within {MAX_LIFT:.0%}): {near}")
    print(f"near-ties won by the used note: before {won_before / max(near, 1):.3f}, after {won_after / max(near, 1):.3f} "
          f"(target >= 0.90)")
    print(f"order flips outside near-ties: {flips} of {pairs - near} (target 0)")
    print(f"top-1 is one of the fact's notes: before {top_before / asked:.3f}, after {top_after / asked:.3f}")
    print(f"search p50 with activation / before any: {p50_after * 1e3:.1f} / {p50_before * 1e3:.1f} ms = "
          f"{p50_after / p50_before:.2f}")


if __name__ == "__main__":
    main()
