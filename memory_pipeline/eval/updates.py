"""``memory-pipeline eval updates``: does the newest statement win when a fact changed?

Reads knowledge-update scenarios (``bench/knowledge_updates/scenarios.yaml``: transcripts and
dated notes whose facts change, and look-alikes whose facts do not), stages each as its own tenant
of a temporary workspace and runs the pipeline as a user runs it: ``memory-pipeline ingest --all``,
then ``memories ingest --all``, ``consolidate --all`` and ``dream --all`` (the tenants the sensor
would dream), each in its own process (the same Dagster jobs, episodes and supersession
included). Every question is asked after ``ingest`` ("before") and after the whole pipeline
("after"), and scored, overall and for transcripts and notes apart:
- newer-first: the first result holding the new value ranks above every result holding only an
  older one (or no older one is returned); new@1: the first result holds the new value;
- default found: a default search (default limit and minimum score) returns the current value
  (the new one, or a look-alike's ``answer``);
- detected: every older statement of a changed fact has a supersession record;
- false supersessions: records in look-alike scenarios.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import yaml

from memory_pipeline.eval.commands import PIPELINE, run_pipeline
from memory_pipeline.tenancy import InvalidTenantError, Tenant

AGENT = "ku"
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "bench" / "knowledge_updates"


class ScenarioError(ValueError):
    """The scenario file is not in the expected format; the message says where."""


@dataclass
class Scenario:
    id: str
    scope: str
    user: str | None
    items: list[dict]
    query: str
    changed: bool
    new: str | None = None
    old: list[str] = field(default_factory=list)
    keep: list[str] = field(default_factory=list)
    answer: str | None = None  # an unchanged fact the query asks for (look-alikes, still-current facts)

    @property
    def tenant(self) -> Tenant:
        """An agent per scenario: its user (named as in the scenario) or its agent-wide memory."""
        if self.scope == "user":
            return Tenant(f"{AGENT}-{self.id}", self.user or "user")
        return Tenant(f"{AGENT}-{self.id}")


def load_scenarios(data: Path) -> tuple[list[Scenario], dict]:
    path = data / "scenarios.yaml" if data.is_dir() else data
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ScenarioError(f"{path}: cannot read scenarios ({exc})") from None
    out = []
    for n, item in enumerate((raw or {}).get("scenarios") or [], 1):
        try:
            changed = bool(item.get("changed", True))
            scenario = Scenario(
                id=str(item["id"]), scope=item.get("scope", "user"), user=item.get("user"), items=list(item["items"]),
                query=str(item["query"]), changed=changed,
                new=str(item["new"]) if changed else None,
                old=[str(o) for o in ([item["old"]] + list(item.get("also_old") or []))] if changed else [],
                keep=[str(k) for k in item.get("keep") or []],
                answer=str(item["answer"]) if item.get("answer") is not None else None,
            )
            scenario.tenant  # noqa: B018 - a bad id fails here, with its scenario number
        except (KeyError, TypeError, InvalidTenantError) as exc:
            raise ScenarioError(f"{path}: scenario {n} is malformed ({type(exc).__name__}: {exc})") from None
        out.append(scenario)
    if not out:
        raise ScenarioError(f"{path}: no scenarios")
    return out, raw


def _ts(value: str) -> datetime:
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).astimezone(UTC)


def stage(scenarios: list[Scenario], raw: dict, root: Path) -> None:
    """Write each scenario's transcripts and notes under ``root`` (one tenant each)."""
    filler, filler_notes = raw.get("filler") or [], raw.get("filler_notes") or []
    for sc in scenarios:
        tenant = sc.tenant
        base = root / tenant.agent_id
        notes_dir = base / "memory" if tenant.is_global else base / "users" / tenant.user_id / "memory"
        sessions: dict[str, list[dict]] = {}
        notes: dict[str, list[str]] = {}
        profile: list[tuple[str, str]] = []
        for item in sc.items:
            if "at" in item:
                at = _ts(item["at"])
                sessions.setdefault(f"{at:%Y%m%d}", []).append({"role": item.get("role", "user"), "content": item["say"], "ts": at})
            elif "note" in item:
                notes.setdefault(str(item["note"]), []).append(item["say"])
            elif "profile" in item:
                profile.append((str(item["profile"]), item["say"]))
        for day, turns in sessions.items():
            first = turns[0]["ts"]
            lines = [
                {"role": f["role"], "content": f["say"], "ts": first.replace(minute=0, second=0).isoformat()}
                for f in (filler if day == min(sessions) else [])
            ]
            lines += [{"role": t["role"], "content": t["content"], "ts": t["ts"].isoformat()} for t in turns]
            folder = base / "sessions" / (tenant.user_id if not tenant.is_global else "_global")
            folder.mkdir(parents=True, exist_ok=True)
            with (folder / f"{sc.id}-{day}.jsonl").open("w", encoding="utf-8") as handle:
                for n, line in enumerate(lines, 1):
                    handle.write(json.dumps({**line, "turn_id": f"t{n}"}) + "\n")
                handle.write(json.dumps({"type": "session.completed", "ts": lines[-1]["ts"]}) + "\n")
        for day, lines in sorted(notes.items()):
            notes_dir.mkdir(parents=True, exist_ok=True)
            extra = filler_notes if day == min(notes) else []
            (notes_dir / f"{day}.md").write_text("".join(f"- {t}\n\n" for t in [*extra, *lines]), encoding="utf-8")
        if profile:
            memory_md = notes_dir.parent / "MEMORY.md"
            memory_md.parent.mkdir(parents=True, exist_ok=True)
            memory_md.write_text("# Profile\n\n" + "".join(f"- {t}\n" for _, t in profile), encoding="utf-8")
            stamp = _ts(min(d for d, _ in profile) + "T12:00:00Z").timestamp()
            os.utime(memory_md, (stamp, stamp))


def rank_of(results: list[dict], needles: list[str], without: str | None = None) -> int | None:
    """1-based rank of the first result holding one of ``needles`` (and not ``without``)."""
    for rank, result in enumerate(results, 1):
        text = result["text"].casefold()
        if any(n.casefold() in text for n in needles) and not (without and without.casefold() in text):
            return rank
    return None


def score_one(sc: Scenario, results: list[dict]) -> dict:
    new = rank_of(results, [sc.new], None)
    old = rank_of(results, sc.old, sc.new)
    return {"new_rank": new, "old_rank": old, "newer_first": new is not None and (old is None or new < old),
            "new_at_1": new == 1}


def kind_of(sc: Scenario) -> str:
    """``transcript`` when a scenario's newest statement is a transcript turn, else ``notes``."""
    return "transcript" if any("at" in item for item in sc.items) else "notes"


def run_updates_eval(data: Path, out: Path, *, embedder: str = "minilm", k: int = 10) -> dict:
    """Stage the scenarios, run ``ingest``, ask; run ``memories ingest``, ``consolidate`` and
    ``dream --all``, ask again; write and return the summary. Questions are asked through
    recall's ``search``, as the ``search`` command and the MCP server ask them."""
    from memory_pipeline.config import get_settings
    from memory_pipeline.timeline.statements import tenant_statements
    from memory_pipeline.timeline.records import supersession_rows
    from memory_pipeline.embedding import make_embedder
    from memory_pipeline.consolidation.store import ConsolidationStore
    from memory_pipeline.recall.search import search

    scenarios, raw = load_scenarios(Path(data))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    log_path = out / "pipeline.log"
    log_path.write_text("", encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="updates-eval-") as temp:
        workdir = Path(temp)
        root = workdir / "agents"
        stage(scenarios, raw, root)
        model = make_embedder(embedder)
        lance = str(workdir / "lancedb")
        settings = get_settings().model_copy(update={"embedder": embedder, "root": str(root), "lancedb_uri": lance})

        def ask(min_score: float | None = 0.0) -> dict[str, list[dict]]:
            answers = {}
            for sc in scenarios:
                t = sc.tenant
                hits = search(sc.query, t.agent_id, None if t.is_global else t.user_id, k=k, min_score=min_score,
                              store=lance, embedder=model, settings=settings)
                answers[sc.id] = [{"citation": h.citation, "text": h.snippet, "when": h.when,
                                   "superseded": h.superseded, "score": h.score} for h in hits]
            return answers

        timings = run_pipeline(root, workdir, embedder, log_path, PIPELINE[:1])
        before = ask()
        timings.update(run_pipeline(root, workdir, embedder, log_path, PIPELINE[1:]))
        after, default = ask(), ask(None)
        store = ConsolidationStore(lance, model.dim)
        records: dict[str, list[dict]] = {}
        texts: dict[str, dict[str, str]] = {}
        for sc in scenarios:
            records[sc.id] = supersession_rows(store, sc.tenant.key).to_dicts()
            texts[sc.id] = {s.ref: s.text for s in tenant_statements(root, sc.tenant, store.typed_memory_rows(sc.tenant.key))}
    return _summarize(scenarios, before, after, default, records, texts, timings, out)


def _share(rows: list[dict], test) -> float | None:
    return round(sum(bool(test(r)) for r in rows) / len(rows), 3) if rows else None


def _summarize(scenarios, before, after, default, records, texts, timings, out: Path) -> dict:
    changed = [sc for sc in scenarios if sc.changed]
    lookalikes = [sc for sc in scenarios if not sc.changed]
    rows = []
    for sc in scenarios:
        old_texts = [texts[sc.id].get(r["old_ref"], "") for r in records[sc.id]]
        row = {"id": sc.id, "scope": sc.scope, "kind": kind_of(sc), "changed": sc.changed, "records": len(records[sc.id])}
        wanted = sc.new if sc.changed else sc.answer
        if sc.changed:
            row["detected"] = all(any(o.casefold() in t.casefold() for t in old_texts) for o in sc.old)
            row["before"], row["after"] = score_one(sc, before[sc.id]), score_one(sc, after[sc.id])
        if wanted:
            # A default search (the default limit and minimum score) returns the current value.
            row["default_found"] = rank_of(default[sc.id], [wanted]) is not None
        row["top"] = after[sc.id][:3]
        rows.append(row)

    def figures(selected: list[dict]) -> dict:
        moved = [r for r in selected if r["changed"]]
        asked = [r for r in selected if "default_found" in r]
        return {
            "changed": len(moved),
            "newer_first": {w: _share(moved, lambda r, w=w: r[w]["newer_first"]) for w in ("before", "after")},
            "new_at_1": {w: _share(moved, lambda r, w=w: r[w]["new_at_1"]) for w in ("before", "after")},
            "detected": _share(moved, lambda r: r["detected"]),
            "default_found": _share(asked, lambda r: r["default_found"]),
        }

    summary = {
        "scenarios": len(scenarios), "changed": len(changed), "lookalikes": len(lookalikes),
        **{k: v for k, v in figures(rows).items() if k != "changed"},
        "by_kind": {kind: figures([r for r in rows if r["kind"] == kind]) for kind in ("transcript", "notes")},
        "false_supersessions": sum(r["records"] for r in rows if not r["changed"]),
        "timings": {k: round(v, 2) for k, v in timings.items()},
        "per_scenario": rows,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str), encoding="utf-8")
    return summary


# ---------------------------------------------------------------- LongMemEval knowledge updates

KNOWLEDGE_UPDATE = "knowledge-update"


def _question_day(query: dict) -> datetime:
    """LongMemEval's ``question_date`` ("2023/05/30 (Tue) 18:40"): the question's "now"."""
    day = str(query.get("question_date") or "").split(" ")[0].replace("/", "-")
    return datetime.fromisoformat(day).replace(tzinfo=UTC) if day else datetime.now(UTC)


def run_longmemeval_updates(data: Path, out: Path, *, embedder: str = "minilm", k: int = 10) -> dict:
    """The knowledge-update questions of a LongMemEval-format folder (``queries.jsonl`` and
    ``sessions/<question_id>/``) through ``ingest``, ``memories ingest``, ``consolidate`` and
    dreaming until every episode is promoted (``eval locomo``'s ``run_commands``): R@1 and MRR on
    their evidence turns, and newest@1, the share whose first result cites the evidence turn
    of the latest session (the current value)."""
    from memory_pipeline.config import get_settings
    from memory_pipeline.embedding import make_embedder
    from memory_pipeline.eval.locomo import (
        AGENT as LOCOMO_AGENT,
        EvalDataError,
        _bare,
        load_queries,
        run_commands,
        stage_workspace,
    )
    from memory_pipeline.recall.search import search

    data, out = Path(data), Path(out)
    queries = [q for q in load_queries(data / "queries.jsonl") if q.get("category_name") == KNOWLEDGE_UPDATE]
    if not queries:
        raise EvalDataError(f"{data / 'queries.jsonl'} holds no {KNOWLEDGE_UPDATE} question")
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="updates-lme-") as temp:
        workdir = Path(temp)
        picked = workdir / "picked" / "sessions"
        picked.mkdir(parents=True)
        for q in queries:
            (picked / q["conversation_id"]).symlink_to((data / "sessions" / q["conversation_id"]).resolve())
        conversations = stage_workspace(picked.parent, workdir)
        log_path = out / "longmemeval.log"
        timings = run_commands(workdir, conversations, embedder, log_path)
        model = make_embedder(embedder)
        lance = str(workdir / "lancedb")
        settings = get_settings().model_copy(update={"embedder": embedder, "root": str(workdir / "agents"), "lancedb_uri": lance})
        for q in queries:
            hits = search(q["question"], LOCOMO_AGENT, q["conversation_id"], k=k, min_score=0.0, now=_question_day(q),
                          store=lance, embedder=model, settings=settings)
            evidence = {_bare(e) for e in q["evidence_turn_ids"]}
            newest = {max(evidence, key=lambda t: (int(t.split(":")[0].lstrip("S") or 0), t))}
            ranks = [n for n, h in enumerate(hits, 1) if evidence & {_bare(t) for t in h.turn_ids or []}]
            rows.append({
                "question_idx": q["question_idx"], "question": q["question"], "answer": q["answer"],
                "first_evidence_rank": ranks[0] if ranks else None,
                "newest_at_1": bool(hits) and bool(newest & {_bare(t) for t in hits[0].turn_ids or []}),
                "top": [{"citation": h.citation, "turn_ids": h.turn_ids, "text": h.snippet[:300], "when": h.when} for h in hits[:3]],
            })
    summary = {
        "questions": len(rows),
        "R@1": _share(rows, lambda r: r["first_evidence_rank"] == 1),
        "MRR": round(sum(1 / r["first_evidence_rank"] for r in rows if r["first_evidence_rank"]) / len(rows), 3),
        "newest_at_1": _share(rows, lambda r: r["newest_at_1"]),
        "timings": {key: round(v, 2) for key, v in timings.items()},
        "per_question": rows,
    }
    (out / "longmemeval.json").write_text(json.dumps(summary, indent=2, default=str), encoding="utf-8")
    return summary


# ---------------------------------------------------------------- precision on realistic memories

PRECISION_LABELS = DEFAULT_DATA / "precision_labels.json"


def label_id(old_text: str, new_text: str) -> str:
    """A record's label key: the texts of the replaced and the replacing statement, as statements
    read them (one line, without code or attachments)."""
    from memory_pipeline.store.base import stable_id
    from memory_pipeline.text.statements import clean_text

    return stable_id("supersession-label", clean_text(old_text), clean_text(new_text))


def precision_records(source: Path, nlp, embedder) -> list[dict]:
    """Every record supersession makes over a workspace root (``data/agents``) or a LoCoMo-format
    folder (``sessions/<conversation>/*.jsonl``, staged as one tenant per conversation), read from
    the tenants' transcripts and notes."""
    from memory_pipeline.timeline.statements import tenant_statements
    from memory_pipeline.timeline.supersede import detect
    from memory_pipeline.eval.locomo import stage_workspace
    from memory_pipeline.sources.workspace import scan_workspace

    source = Path(source)
    with tempfile.TemporaryDirectory(prefix="precision-") as temp:
        root = source
        if (source / "sessions").is_dir() and (source / "queries.jsonl").is_file():
            stage_workspace(source, Path(temp))
            root = Path(temp) / "agents"
        out = []
        for tenant in scan_workspace(root).tenants:
            for pair in detect(tenant_statements(root, tenant), nlp, embedder):
                out.append({
                    "id": label_id(pair.old.text, pair.new.text), "source": source.name, "tenant": tenant.key,
                    "old_ref": pair.old.ref, "new_ref": pair.new.ref,
                    "old_sentence": pair.old_sentence, "new_sentence": pair.new_sentence,
                })
    return out


def score_precision(records: list[dict], labels: dict[str, dict]) -> dict:
    """Labelled-correct records over labelled records; unlabelled records are listed to be labelled."""
    correct = sum(1 for r in records if labels.get(r["id"], {}).get("correct") is True)
    wrong = [r for r in records if labels.get(r["id"], {}).get("correct") is False]
    unlabelled = [r for r in records if r["id"] not in labels]
    labelled = correct + len(wrong)
    return {
        "records": len(records), "correct": correct, "wrong": len(wrong), "unlabelled": len(unlabelled),
        "precision": round(correct / labelled, 3) if labelled else None,
        "wrong_records": wrong, "unlabelled_records": unlabelled,
    }


def run_precision_eval(sources: list[Path], out: Path, *, embedder: str = "minilm",
                       labels_path: Path = PRECISION_LABELS) -> dict:
    """Supersession over realistic memories, scored against hand labels."""
    from memory_pipeline.embedding import make_embedder
    from memory_pipeline.text.statements import load_nlp

    labels = json.loads(Path(labels_path).read_text(encoding="utf-8"))["labels"]
    nlp, model = load_nlp(), make_embedder(embedder)
    records = [r for source in sources for r in precision_records(source, nlp, model)]
    summary = {"sources": [str(s) for s in sources], **score_precision(records, labels)}
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "precision.json").write_text(json.dumps(summary, indent=2, default=str), encoding="utf-8")
    return summary
