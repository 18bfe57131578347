"""``memory-pipeline eval consolidation``: what consolidation keeps of a LoCoMo-format conversation.

Each conversation of ``DATA/sessions/<conversation>/*.jsonl`` becomes the tenant
``locomo~<conversation>`` of a temporary workspace (as ``eval locomo`` stages it). The pipeline
then runs as a user runs it, each command in its own process launching the same Dagster jobs:
``memory-pipeline ingest --all``, ``memories ingest --all``, ``consolidate --all``, ``dream --all``
(the tenants the sensor would dream), then ``dream --force`` for every conversation until no
episode is left unpromoted (a dreaming run promotes at most 10 episodes, as the sensor's runs do). What the stores and the dreamed documents
then hold is written to ``OUT/units.jsonl``, one unit per line,
``{"conversation_id", "session", "kind", "text"}`` (kinds: ``episode`` and ``summary`` from the
episode summary, ``relation``, ``memory``, ``dream``), the format of the development set's scorer,
which is then run on it when it and the gold files (``DATA/gold_observations.jsonl``,
``DATA/gold_session_summaries.jsonl``) are found. The commands' output goes to ``OUT/pipeline.log``.

Beside the scorer's coverage and summary F1, the report counts relations per session, entities,
and the share of typed memories and dreamed lines that name a speaker of their conversation.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from memory_pipeline.eval.locomo import AGENT, EvalDataError, run_commands, stage_workspace
from memory_pipeline.tenancy import Tenant

UNITS = "units.jsonl"
_DREAM_LINE_RE = re.compile(r"^- (?P<text>.*?) \[(?P<session>[^\[\]·]+?) · (?P<path>[^\[\]#]+)#L\d+(?:-L\d+)?\]$")


@dataclass
class ConsolidationEvalReport:
    units: Path
    conversations: list[str]
    counts: dict[str, int] = field(default_factory=dict)  # units per kind
    sessions: int = 0
    entities: list[dict] = field(default_factory=list)  # {conversation, name, type}
    named_subject: dict[str, float] = field(default_factory=dict)  # kind -> share naming a speaker
    scores: dict | None = None
    timings: dict[str, float] = field(default_factory=dict)  # seconds of each command, as "<command>_s"
    dream_runs: int = 0  # ``dream --force`` runs after ``dream --all`` until every episode was promoted

    def to_dict(self) -> dict:
        return {
            "units": str(self.units), "conversations": self.conversations, "counts": self.counts,
            "sessions": self.sessions, "relations_per_session": self.relations_per_session,
            "entities": len(self.entities), "named_subject": self.named_subject, "scores": self.scores,
            "timings": self.timings, "dream_runs": self.dream_runs,
        }

    @property
    def relations_per_session(self) -> float:
        return round(self.counts.get("relation", 0) / self.sessions, 2) if self.sessions else 0.0


def speakers(data: Path, conversation: str) -> set[str]:
    """The named roles of a conversation's transcripts (its speakers)."""
    from memory_pipeline.text.statements import speaker_of

    names: set[str] = set()
    for file in sorted((data / "sessions" / conversation).glob("*.jsonl")):
        for line in file.read_text(encoding="utf-8").splitlines():
            try:
                role = json.loads(line).get("role")
            except (ValueError, AttributeError):
                continue
            who = speaker_of(role, conversation) if isinstance(role, str) else None
            if who:
                names.add(who)
    return names


def names_subject(unit: dict, people: set[str], entities: list[dict]) -> bool:
    """Whether a unit names a speaker of its conversation; a recurring-pattern line may instead
    open with the entity it is about ("Rome: came up in 2 sessions")."""
    if any(re.search(rf"\b{re.escape(p)}\b", unit["text"]) for p in people):
        return True
    if unit["kind"] != "dream":
        return False
    return any(unit["text"].startswith(f"{e['name']}: ") for e in entities if e["conversation_id"] == unit["conversation_id"])


def dream_units(path: Path) -> list[tuple[str, str]]:
    """(session, text) of every line of a dreaming document."""
    out = []
    for raw in path.read_text(encoding="utf-8").splitlines() if path.exists() else []:
        match = _DREAM_LINE_RE.match(raw.strip())
        if match:
            out.append((match["session"].strip(), match["text"].strip()))
    return out


def conversation_units(root: Path, store, tenant: Tenant) -> list[dict]:
    """What the stores and the dreamed documents hold for one conversation, as the scorer's units."""
    from memory_pipeline.episodes.dreaming import dreamed_files

    conv = tenant.user_id
    units = []
    for row in store.episode_rows(tenant.key).sort("completed_at").iter_rows(named=True):
        session = Path(row["path"]).stem
        units.append({"conversation_id": conv, "session": session, "kind": "episode", "text": row["summary"]})
        units.append({"conversation_id": conv, "session": session, "kind": "summary", "text": row["summary"]})
    names = {r["id"]: r["name"] for r in store.entity_rows(tenant.key).iter_rows(named=True)}
    for row in store.relation_rows(tenant.key).iter_rows(named=True):
        subject = names.get(row["subject_id"], row["subject"])
        obj = names.get(row["object_id"], row["object"]) if row["object_id"] else row["object"]
        text = f"{subject} {row['predicate'].replace('_', ' ')} {obj}"
        units.append({"conversation_id": conv, "session": Path(row["path"]).stem, "kind": "relation", "text": text,
                      "line": row["line"], "evidence": row["evidence"]})
    memories = store.typed_memory_rows(tenant.key)
    for row in memories.iter_rows(named=True) if memories.height else []:
        path = (row["source_ref"] or "").split("#", 1)[0]
        units.append({"conversation_id": conv, "session": Path(path).stem, "kind": "memory", "text": row["content"],
                      "memory_type": row["memory_type"]})
    for document in dreamed_files(root, tenant):
        for session, text in dream_units(document):
            units.append({"conversation_id": conv, "session": session, "kind": "dream", "text": text})
    return units


def run_scorer(scorer: Path, data: Path, units: Path, out: Path) -> dict | None:
    """The development set's scorer run on ``units`` (its JSON figures), or None when it fails."""
    result = subprocess.run(
        [sys.executable, str(scorer), "--gold", str(data), "--units", str(units), "--sessions", str(data / "sessions"),
         "--json-out", str(out / "scores.json")],
        capture_output=True, text=True, check=False,
    )
    if result.returncode != 0:
        raise EvalDataError(f"the scorer {scorer} failed: {result.stderr.strip().splitlines()[-1:]}")
    return json.loads((out / "scores.json").read_text(encoding="utf-8"))


def run_consolidation_eval(
    data: Path, out: Path, *, embedder: str = "minilm", workdir: Path | None = None, scorer: Path | None = None,
) -> ConsolidationEvalReport:
    """Run the pipeline over every conversation of ``data``, write ``out/units.jsonl``, score it if
    a scorer is found."""
    from memory_pipeline.consolidation.store import ConsolidationStore
    from memory_pipeline.embedding import EMBEDDER_IDENTITY

    data, out = Path(data), Path(out)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "pipeline.log"
    temp = None
    if workdir is None:
        temp = tempfile.TemporaryDirectory(prefix="consolidation-eval-")
        workdir = Path(temp.name)
    try:
        workdir = Path(workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        conversations = stage_workspace(data, workdir)
        root = workdir / "agents"
        timings = run_commands(workdir, conversations, embedder, log)
        store = ConsolidationStore(str(workdir / "lancedb"), EMBEDDER_IDENTITY[embedder][1])
        units: list[dict] = []
        entities: list[dict] = []
        for conv in conversations:
            tenant = Tenant(AGENT, conv)
            units += conversation_units(root, store, tenant)
            entities += [{"conversation_id": conv, "name": r["name"], "type": r["type"]}
                         for r in store.entity_rows(tenant.key).iter_rows(named=True)]
    finally:
        if temp is not None:
            temp.cleanup()
    path = out / UNITS
    with path.open("w", encoding="utf-8") as handle:
        for unit in units:
            handle.write(json.dumps(unit) + "\n")
    with (out / "entities.jsonl").open("w", encoding="utf-8") as handle:
        for entity in entities:
            handle.write(json.dumps(entity) + "\n")
    report = ConsolidationEvalReport(path, conversations, dict(Counter(u["kind"] for u in units)), entities=entities,
                                     timings={k: round(v, 1) for k, v in timings.items() if k.endswith("_s")},
                                     dream_runs=int(timings["dream_runs"]))
    report.sessions = len({u["session"] for u in units if u["kind"] == "episode"})
    people = {conv: speakers(data, conv) for conv in conversations}
    for kind in ("memory", "dream", "relation"):
        items = [u for u in units if u["kind"] == kind]
        if items:
            named = sum(1 for u in items if names_subject(u, people[u["conversation_id"]], entities))
            report.named_subject[kind] = round(named / len(items), 3)
    scorer = scorer or data.parent / "score_consolidation.py"
    if scorer.is_file() and (data / "gold_observations.jsonl").is_file():
        report.scores = run_scorer(scorer, data, path, out)
    (out / "summary.json").write_text(json.dumps(report.to_dict(), indent=2), encoding="utf-8")
    return report
