"""``memory-pipeline eval locomo``: recall quality on a LoCoMo-format set, end to end.

The data folder holds ``sessions/<conversation>/*.jsonl`` (one turn per line: role, content, ts,
turn_id) and ``queries.jsonl`` (question_idx, conversation_id, question, category,
evidence_turn_ids). Each conversation becomes the tenant ``locomo~<conversation>`` of a temporary
workspace. By default the pipeline then runs as a user runs it, each command in its own process
launching the same Dagster jobs (``ingest --all``, ``memories ingest --all``, ``consolidate --all``,
``dream --all``, then ``dream --force`` until every episode is promoted), so answers come from every
layer: turns, typed memories, episodes and dreamed documents. ``layers="turns"`` runs only the L0
index job, in process, to measure the turn index alone. Every question is answered by ``search``,
asked at the record's ``question_date`` when it has one (LongMemEval's "now" of the question;
``2023/05/30 (Tue) 18:40`` or ISO-8601). Scores follow the development set's scorer: R@k is the share
of questions with an evidence turn among the turn ids of the top k results, MRR the mean
reciprocal rank of the first such result (cut at 10), and a result's length is its count of
``[a-z0-9]+`` tokens. Beside them: how many turns a result cites on average (an episode cites
every turn of its session) and which layer the first results come from.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field, fields
from pathlib import Path

from memory_pipeline.recall.query import reference_time
from memory_pipeline.tenancy import InvalidTenantError, Tenant

AGENT = "locomo"
LAYERS = ("all", "turns")
KS = (1, 5, 10)
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_TOKEN_RE = re.compile(r"[a-z0-9]+")


class EvalDataError(ValueError):
    """The data folder is not in the expected format; the message says what is missing."""


@dataclass
class EvalReport:
    table: dict[str, dict[str, float]]  # group -> metric -> value (and n)
    mean_tokens_per_result: float
    timings: dict[str, float]
    results: Path
    queries: int
    conversations: list[str] = field(default_factory=list)
    layers: str = "all"
    mean_turns_cited_per_result: float = 0.0  # an episode cites every turn of its session
    first_result_sources: dict[str, int] = field(default_factory=dict)  # layer of each first result -> questions
    after_use: dict[str, dict[str, float]] | None = None  # the table again, after activation ran on the answers' use

    def to_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}
        return {**out, "results": str(self.results)}


def load_queries(path: Path) -> list[dict]:
    queries = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                record.setdefault("question_idx", len(queries))
                for key in ("conversation_id", "question", "evidence_turn_ids"):
                    if key not in record:
                        raise KeyError(key)
                if record.get("question_date"):
                    record["asked_at"] = reference_time(record["question_date"])
            except (ValueError, KeyError) as exc:
                raise EvalDataError(f"{path}, line {number}: not a query record ({exc})") from None
            queries.append(record)
    return queries


def stage_workspace(data: Path, workdir: Path) -> list[str]:
    """Copy ``data/sessions/<conv>/*.jsonl`` to ``workdir/agents/locomo/sessions/<conv>/``."""
    sessions = data / "sessions"
    if not sessions.is_dir():
        raise EvalDataError(f"{data} has no sessions/ folder: expected sessions/<conversation>/*.jsonl")
    conversations = []
    for folder in sorted(p for p in sessions.iterdir() if p.is_dir()):
        try:
            Tenant(AGENT, folder.name)
        except InvalidTenantError as exc:
            raise EvalDataError(f"conversation folder {folder.name!r} cannot be a user id: {exc}") from None
        files = sorted(folder.glob("*.jsonl"))
        if not files:
            continue
        dest = workdir / "agents" / AGENT / "sessions" / folder.name
        dest.mkdir(parents=True, exist_ok=True)
        for file in files:
            target = dest / file.name
            if not target.exists() or target.read_bytes() != file.read_bytes():
                shutil.copyfile(file, target)
        conversations.append(folder.name)
    if not conversations:
        raise EvalDataError(f"{sessions} holds no <conversation>/*.jsonl transcripts")
    return conversations


def ingest(workdir: Path, conversations: list[str], embedder: str, log_path: Path | None = None) -> float:
    """Run the L0 index job over the staged conversations on a temporary Dagster instance.

    The run's event log goes to ``log_path`` (when given) instead of the terminal.
    """
    import dagster as dg

    from memory_pipeline.l0.assets import l0_assets, l0_index_job
    from memory_pipeline.orchestration.io_manager import PartitionedPickleIOManager
    from memory_pipeline.orchestration.resources import EmbedderResource, LanceDBResource, WorkspaceResource
    from memory_pipeline.orchestration.runs import run_partitioned_job

    defs = dg.Definitions(
        assets=l0_assets,
        jobs=[l0_index_job],
        resources={
            "io_manager": PartitionedPickleIOManager(base_dir=str(workdir / "io")),
            "workspace": WorkspaceResource(root=str(workdir / "agents")),
            "lancedb": LanceDBResource(uri=str(workdir / "lancedb")),
            "embedder": EmbedderResource(kind=embedder),
        },
        executor=dg.in_process_executor,
    )
    started = time.perf_counter()
    # An in-memory instance: the run, its events and the tenant partitions vanish with the process.
    instance = dg.DagsterInstance.ephemeral()
    keys = [Tenant(AGENT, c).key for c in conversations]
    if log_path is None:
        run_partitioned_job(defs, "l0_index_job", instance, keys)
    else:
        with log_path.open("w", encoding="utf-8") as log, contextlib.redirect_stderr(log):
            run_partitioned_job(defs, "l0_index_job", instance, keys)
    return time.perf_counter() - started


def run_commands(workdir: Path, conversations: list[str], embedder: str, log_path: Path) -> dict[str, float]:
    """The pipeline's commands over the staged conversations, as a user runs them (output to
    ``log_path``): ``ingest --all``, ``memories ingest --all``, ``consolidate --all``, ``dream --all``,
    then ``dream --force`` until every episode is promoted. Seconds of each, as ``<command>_s``, and
    ``dream_runs``."""
    from memory_pipeline.consolidation.store import ConsolidationStore
    from memory_pipeline.embedding import EMBEDDER_IDENTITY
    from memory_pipeline.eval.commands import dream_all, run_pipeline

    if embedder not in EMBEDDER_IDENTITY:
        raise EvalDataError(f"unknown embedder {embedder!r}: use {' or '.join(map(repr, EMBEDDER_IDENTITY))}")
    log_path.write_text("", encoding="utf-8")
    root = workdir / "agents"
    seconds = {f"{command}_s": s for command, s in run_pipeline(root, workdir, embedder, log_path).items()}
    started = time.perf_counter()
    store = ConsolidationStore(str(workdir / "lancedb"), EMBEDDER_IDENTITY[embedder][1])
    runs = dream_all(root, workdir, embedder, log_path, [Tenant(AGENT, c) for c in conversations], store)
    seconds["dream --force_s"] = time.perf_counter() - started
    seconds["dream_runs"] = runs
    return seconds


def answer_all(queries: list[dict], ask, results_path: Path, on_hits=None, progress=None) -> tuple[dict, list[float]]:
    """Every query's results from ``ask`` (written to ``results_path``) and the sorted latencies;
    ``on_hits`` is told of each non-empty answer."""
    ranked: dict[int, list[dict]] = {}
    latencies: list[float] = []
    with results_path.open("w", encoding="utf-8") as handle:
        for number, query in enumerate(queries):
            t0 = time.perf_counter()
            hits = ask(query)
            latencies.append(time.perf_counter() - t0)
            if on_hits is not None and hits:
                on_hits(hits)
            rows = [
                {"turn_ids": h.turn_ids, "text": h.snippet, "score": h.score, "source": h.source, "citation": h.citation}
                for h in hits
            ]
            ranked[int(query["question_idx"])] = rows
            handle.write(json.dumps({"question_idx": query["question_idx"], "ranked": rows}) + "\n")
            if progress is not None:
                progress(number + 1, len(queries))
    latencies.sort()
    return ranked, latencies


def activate(workdir: Path, conversations: list[str]) -> None:
    """Run the activation job (the nightly one) over the staged conversations' tenants."""
    import dagster as dg

    from memory_pipeline.activation.assets import activation_assets, activation_job
    from memory_pipeline.orchestration.resources import LanceDBResource
    from memory_pipeline.orchestration.runs import run_partitioned_job

    defs = dg.Definitions(assets=activation_assets, jobs=[activation_job],
                          resources={"lancedb": LanceDBResource(uri=str(workdir / "lancedb"))},
                          executor=dg.in_process_executor)
    run_partitioned_job(defs, "activation_job", dg.DagsterInstance.ephemeral(), [Tenant(AGENT, c).key for c in conversations])


def tokens(text: str) -> int:
    return len(_TOKEN_RE.findall((text or "").lower()))


def score(queries: list[dict], ranked: dict[int, list[dict]]) -> tuple[dict, float]:
    """R@k, MRR per category and overall, and the mean result length in tokens; where the queries
    name every turn of the sessions holding the answer (LongMemEval's ``answer_session_turn_ids``),
    also session R@k (over the queries naming them): a result citing any turn of such a session counts."""
    sums: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))  # group -> "turn" / "session" -> queries
    token_total = result_total = 0
    for query in queries:
        evidence = {_bare(e) for e in query["evidence_turn_ids"]}
        if not evidence:
            continue
        sessions = {_bare(t) for t in query.get("answer_session_turn_ids") or []}
        results = ranked.get(int(query["question_idx"]), [])[: max(KS)]
        first = first_session = None
        for rank, result in enumerate(results, 1):
            token_total += tokens(result.get("text", ""))
            result_total += 1
            cited = {_bare(t) for t in result.get("turn_ids") or []}
            if first is None and evidence & cited:
                first = rank
            if first_session is None and sessions & cited:
                first_session = rank
        category = query.get("category")
        label = query.get("category_name") or CATEGORY_NAMES.get(category, "")
        group = " ".join(str(part) for part in (category, label) if part not in (None, ""))
        for name in ([group] if group else []) + ["overall"]:
            counts[name]["turn"] += 1
            for k in KS:
                sums[name][f"R@{k}"] += 1.0 if first is not None and first <= k else 0.0
            sums[name]["MRR"] += 1.0 / first if first else 0.0
            if sessions:
                counts[name]["session"] += 1
                for k in KS[1:]:
                    sums[name][f"session R@{k}"] += 1.0 if first_session is not None and first_session <= k else 0.0
    table = {
        name: {**{m: v / counts[name]["session" if m.startswith("session") else "turn"] for m, v in metrics.items()},
               "n": counts[name]["turn"]}
        for name, metrics in sums.items()
    }
    return table, (round(token_total / result_total, 1) if result_total else 0.0)


def _bare(turn_id: str) -> str:
    parts = str(turn_id).split(":")
    return ":".join(parts[-2:]) if len(parts) > 2 else str(turn_id)


def run_locomo_eval(
    data: Path,
    out: Path,
    *,
    k: int = 10,
    embedder: str = "minilm",
    workdir: Path | None = None,
    progress=None,
    after_use: bool = False,
    layers: str = "all",
) -> EvalReport:
    """Run the pipeline (``layers``: ``all`` as a user runs it, ``turns`` the L0 index job alone),
    answer every query with ``search`` (``k`` results, no minimum score), score.

    ``after_use``: every answer is also logged as an agent's use of it (its first result used, the
    rest shown), the activation job ages the log, and every question is asked again: the second
    table (``after_use``) shows what activation changed once the memory has been used."""
    from memory_pipeline.config import get_settings
    from memory_pipeline.embedding import make_embedder
    from memory_pipeline.recall.search import search

    if layers not in LAYERS:
        raise EvalDataError(f"unknown layers {layers!r}: use {' or '.join(map(repr, LAYERS))}")
    data, out = Path(data), Path(out)
    queries_path = data / "queries.jsonl"
    if not queries_path.is_file():
        raise EvalDataError(f"{data} has no queries.jsonl")
    queries = load_queries(queries_path)
    out.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}
    after_use_table: dict | None = None
    temp = None
    if workdir is None:
        temp = tempfile.TemporaryDirectory(prefix="locomo-eval-")
        workdir = Path(temp.name)
    workdir = Path(workdir)
    try:
        workdir.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        conversations = stage_workspace(data, workdir)
        timings["stage_s"] = time.perf_counter() - started
        if layers == "turns":
            timings["ingest_s"] = ingest(workdir, conversations, embedder, out / "ingest.log")
        else:
            timings.update(run_commands(workdir, conversations, embedder, out / "ingest.log"))
        lance = str(workdir / "lancedb")
        settings = get_settings().model_copy(update={"embedder": embedder, "root": str(workdir / "agents"),
                                                     "lancedb_uri": lance})
        model = make_embedder(embedder)
        known = set(conversations)

        def ask(query: dict) -> list:
            if query["conversation_id"] not in known:
                return []
            return search(query["question"], AGENT, query["conversation_id"], k=k, min_score=0.0,
                          now=query.get("asked_at"), store=lance, embedder=model, settings=settings)

        results_path = out / "results.jsonl"
        use = None
        if after_use:
            from memory_pipeline.activation.access_log import record_access

            # An agent that injects under a small budget uses the first result and was shown the rest.
            def use(hits):
                record_access(lance, "inject", returned=hits, used=hits[:1])

        ranked, latencies = answer_all(queries, ask, results_path, use, progress)
        timings["search_total_s"] = sum(latencies)
        timings["search_p50_ms"] = 1000 * latencies[len(latencies) // 2] if latencies else 0.0
        timings["search_p95_ms"] = 1000 * latencies[int(len(latencies) * 0.95)] if latencies else 0.0
        table, mean_tokens = score(queries, ranked)
        if after_use:
            started = time.perf_counter()
            activate(workdir, conversations)
            timings["activation_s"] = time.perf_counter() - started
            after_ranked, _ = answer_all(queries, ask, out / "results_after_use.jsonl")
            after_use_table = score(queries, after_ranked)[0]
    finally:
        if temp is not None:
            temp.cleanup()
    cited = [len(r.get("turn_ids") or []) for rows in ranked.values() for r in rows]
    firsts = Counter(rows[0]["source"] for rows in ranked.values() if rows)
    report = EvalReport(
        table, mean_tokens, {k_: round(v, 3) for k_, v in timings.items()}, results_path, len(queries), conversations,
        layers, round(sum(cited) / len(cited), 1) if cited else 0.0, dict(firsts.most_common()), after_use_table,
    )
    (out / "summary.json").write_text(json.dumps(report.to_dict(), indent=2), encoding="utf-8")
    return report
