"""Consolidation benchmark on the LoCoMo dev transcripts (read in place, never copied).

The transcripts live at ``../shared/eval/locomo-dev/sessions/<conversation>/<session>.jsonl``,
which is the workspace layout ``<root>/<agent>/sessions/<user>/`` with root ``../shared/eval``,
agent ``locomo-dev`` and one tenant per conversation. They carry no ``session.completed`` line,
so every session completes by the idle timeout. Only LanceDB (a temporary folder) is written:
dreaming is not run, since it would write into the tenant's memory folder.

In one invocation:
1. spaCy documents per second over every turn of every session: the full pipeline (what the
   rules read) and NER alone, with the entities of each compared to the full pipeline's; and the
   full pipeline as spaCy's default load makes it (thinc's BLIS kernels instead of numpy's BLAS,
   the attribute ruler's ``Matcher`` instead of its lookup: what ``load_pipeline`` changes), with
   every document's tags, parts of speech, morphology, parse, lemmas and entities compared;
2. sessions consolidated per minute by the plain functions (summaries, MiniLM vectors, spaCy
   graph, supersession over the tenant's statements, entity dedup), with the time of each part,
   in two passes, before and after the first Dagster mode: every ratio is to their mean time;
3. the same work through Dagster: one ``consolidation_job`` run per tenant partition, one
   backfill run over the range of every tenant, and the launch path the CLI, the demo and the
   sensor use (``run_consolidation``: one run per stretch of neighbouring tenants, here one), the
   last also on Dagster's stock SQLite storage and with the instance on the local PostgreSQL server
   (a new database, dropped after) through the storage ``deploy/dagster.yaml`` names, as
   production stores its events; each with its events and its ratio to the plain functions'
   rate measured in the same invocation. The other SQLite modes store events as the local
   instance does (``LocalSqliteStorage``, in batches).

Supersession is decided over all of a tenant's statements, so the plain functions run it once per
tenant, after its graph, and a Dagster run once per tenant it covers. Each mode starts from an
empty LanceDB folder and with no parse kept in the process (the models stay loaded: a process
loads them once).

    python bench/consolidate.py [--eval ../shared/eval/locomo-dev] [--embedder minilm]
"""

from __future__ import annotations

import os
import platform
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from contextlib import nullcontext
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench import command_line, work_offline, write_report  # noqa: E402

work_offline()

DEFAULT_EVAL = HERE.parent.parent / "shared" / "eval" / "locomo-dev"
if not DEFAULT_EVAL.is_dir():  # a worktree one folder deeper (<repo parent>/wt/<name>)
    DEFAULT_EVAL = HERE.parent.parent.parent / "shared" / "eval" / "locomo-dev"


def load_sessions(eval_dir: Path):
    from memory_pipeline.episodes.sessions import tenant_sessions
    from memory_pipeline.tenancy import Tenant

    root = eval_dir.parent
    agent = eval_dir.name
    tenants = [Tenant(agent, p.name) for p in sorted((eval_dir / "sessions").iterdir()) if p.is_dir()]
    now, idle = datetime.now(UTC), timedelta(minutes=30)
    sessions = {t: tenant_sessions(root, t, now, idle).complete for t in tenants}
    return root, sessions


def bench_spacy(texts: list[str], repeats: int = 3) -> dict:
    import spacy

    from memory_pipeline.text.statements import SPACY_MODEL, load_nlp

    started = time.perf_counter()
    nlp = load_nlp()
    load_s = time.perf_counter() - started
    stock = spacy.load(SPACY_MODEL)  # thinc's BLIS kernels for every matrix product, the ruler's Matcher
    ner_only = [p for p in nlp.pipe_names if p not in ("tok2vec", "ner")]
    configs = {
        "full pipeline": (nlp, []), "NER only": (nlp, ner_only), "full pipeline, spaCy's default load": (stock, []),
    }
    out = {"docs": len(texts), "load_seconds": round(load_s, 2), "configs": {}}
    for pipeline in (nlp, stock):
        list(pipeline.pipe(texts[:50], batch_size=64))  # warm-up
    best: dict[str, float] = {}
    analyses: dict[str, list] = {}
    for _ in range(repeats):  # interleaved repeats, best time kept: the machine's noise is large
        for name, (pipeline, disabled) in configs.items():
            started = time.perf_counter()
            docs = list(pipeline.pipe(texts, batch_size=64, disable=disabled))
            best[name] = min(best.get(name, float("inf")), time.perf_counter() - started)
            analyses[name] = [
                (tuple((e.text, e.label_) for e in doc.ents),
                 tuple((t.tag_, t.pos_, str(t.morph), t.dep_, t.head.i, t.lemma_) for t in doc))
                for doc in docs
            ]
    reference = analyses["full pipeline"]
    for name, (_, disabled) in configs.items():
        seconds = best[name]
        same = sum(a[0] == b[0] for a, b in zip(analyses[name], reference)) / len(texts)
        out["configs"][name] = {
            "disabled": disabled, "seconds": round(seconds, 2), "docs_per_s": round(len(texts) / seconds, 1),
            "docs_with_same_entities_as_full": round(same, 4),
        }
        print(f"spaCy {name:36s}: {len(texts) / seconds:6.1f} docs/s  (same entities as full: {same:.1%})")
    # The shared pipeline changes where the matrix products run and how the ruler finds its
    # matches: every tag, part of speech, morphology, parse, lemma and entity should be the same.
    identical = sum(a == b for a, b in zip(analyses["full pipeline, spaCy's default load"], reference)) / len(texts)
    out["configs"]["full pipeline, spaCy's default load"]["docs_identical_to_full"] = round(identical, 4)
    print(f"spaCy documents identical (tags, POS, morphology, parse, lemmas, entities) to the default load's: {identical:.1%}")
    return out


def forget_parses() -> None:
    """Empties what a process keeps between runs (recent spaCy parses), so that each measured pass
    parses every turn itself; the models stay loaded."""
    from memory_pipeline.text.statements import forget_parses as forget_recent_parses

    forget_recent_parses()


def bench_functions(root: Path, sessions: dict, lance: Path, embedder_kind: str) -> dict:
    from memory_pipeline.consolidation.pipeline import build_graph, consolidate_episodes, dedup_entities
    from memory_pipeline.consolidation.store import ConsolidationStore
    from memory_pipeline.consolidation.supersession import supersede_tenant
    from memory_pipeline.embedding import make_embedder
    from memory_pipeline.episodes.sessions import SessionsRead
    from memory_pipeline.text.statements import load_nlp

    started = time.perf_counter()
    embedder = make_embedder(embedder_kind)
    embedder.embed(["warm up"])
    load_nlp()
    load_s = time.perf_counter() - started
    store = ConsolidationStore(lance, embedder.dim)
    now = datetime.now(UTC)
    forget_parses()
    parts = {"episodes": 0.0, "embed": 0.0, "graph": 0.0, "nlp": 0.0, "supersede": 0.0, "dedup": 0.0}
    count = relations = merged = supersessions = 0
    started = time.perf_counter()
    read = SessionsRead()  # as in one run: the graph reads the sessions the episodes read
    for tenant in sessions:
        t0 = time.perf_counter()
        report = consolidate_episodes(root, store, tenant, None, embedder, now, timedelta(minutes=30), timedelta(days=90),
                                      read=read)
        parts["episodes"] += time.perf_counter() - t0
        parts["embed"] += report.embed_s
        count += len(report.drafts)
        t0 = time.perf_counter()
        graph = build_graph(root, store, tenant, None, embedder, read=read)
        parts["graph"] += time.perf_counter() - t0
        parts["nlp"] += graph.nlp_s
        relations += len(graph.relations)
        t0 = time.perf_counter()
        supersessions += len(supersede_tenant(root, lance, tenant, embedder, now).records)
        parts["supersede"] += time.perf_counter() - t0
        t0 = time.perf_counter()
        merged += len(dedup_entities(store, tenant, now).merged)
        parts["dedup"] += time.perf_counter() - t0
    seconds = time.perf_counter() - started
    rate = count / seconds * 60
    print(f"plain functions: {count} sessions in {seconds:.1f} s = {rate:.0f} sessions/min "
          f"(models loaded once in {load_s:.1f} s, not counted); {relations} relations, {supersessions} "
          f"supersessions, {merged} merges")
    print("  parts (s): " + ", ".join(f"{k} {v:.1f}" for k, v in parts.items()))
    return {
        "sessions": count, "seconds": round(seconds, 2), "sessions_per_min": round(rate, 1),
        "model_load_seconds": round(load_s, 2), "relations": relations, "supersessions": supersessions,
        "entities_merged": merged,
        "parts_seconds": {k: round(v, 2) for k, v in parts.items()},
    }


def both_passes(first: dict, second: dict) -> dict:
    """The plain functions' figures from the passes before and after the first Dagster mode: their
    mean time is the baseline every ratio uses, so that the machine's speed drifting between two
    passes (here by up to a third within minutes) does not land on one side of the ratio."""
    same = ("sessions", "relations", "supersessions", "entities_merged")
    assert all(first[k] == second[k] for k in same), f"the two plain passes differ: {first} {second}"
    seconds = (first["seconds"] + second["seconds"]) / 2
    return {
        **first, "seconds": round(seconds, 2), "sessions_per_min": round(first["sessions"] / seconds * 60, 1),
        "passes_seconds": [first["seconds"], second["seconds"]],
        "parts_seconds": {k: round((v + second["parts_seconds"][k]) / 2, 2) for k, v in first["parts_seconds"].items()},
    }


def bench_dagster(
    root: Path, sessions: dict, lance: Path, home: Path, embedder_kind: str, which: str = "all", after_first=None
) -> dict:
    from bench.postgres import postgres_database
    from memory_pipeline.orchestration.instance.sqlite import storage_config

    # The Dagster instance's SQLite event log commits every event; on this machine's disk a commit
    # costs 6-11 ms (0.02 ms on tmpfs), which dominates small runs. Production uses PostgreSQL.
    # The SQLite modes store events as the local instance does (LocalSqliteStorage, local_instance);
    # the launch path runs once more on Dagster's stock SQLite storage, for comparison.
    shm = Path("/dev/shm")
    fast = Path(tempfile.mkdtemp(prefix="mp-bench-instance-", dir=shm)) if shm.is_dir() else home / "fast"
    modes = {
        "run per tenant, instance on disk": (home / "disk", "partition", "local"),
        "run per tenant, instance on tmpfs": (fast / "a", "partition", "local"),
        "backfill over every tenant, instance on tmpfs": (fast / "b", "backfill", "local"),
        "launch path (run_consolidation), tmpfs": (fast / "c", "launch", "local"),
        "launch path, Dagster's stock SQLite storage, tmpfs": (fast / "e", "launch", "stock"),
        "launch path (run_consolidation), PostgreSQL": (fast / "d", "launch", "postgres"),
    }
    if which == "tmpfs":
        modes = {k: v for k, v in modes.items() if "tmpfs" in k}
    elif which == "backfill":
        modes = {k: v for k, v in modes.items() if v[1] == "backfill"}
    elif which == "launch":
        modes = {k: v for k, v in modes.items() if v[1] == "launch"}
    if which != "launch":
        modes = {k: v for k, v in modes.items() if v[2] == "local"}
    out = {}
    try:
        for mode, (instance_dir, how, kind) in modes.items():
            with postgres_database() if kind == "postgres" else nullcontext() as storage:
                if kind == "postgres" and storage is None:
                    print(f"Dagster, {mode}: skipped")
                    continue
                if kind == "local":
                    storage = storage_config(str(instance_dir))
                out[mode] = _dagster_mode(root, sessions, lance / str(len(out)), instance_dir, how, embedder_kind, storage)
            print(f"Dagster, {mode:40s}: {out[mode]['sessions']} sessions in {out[mode]['runs']} runs ({out[mode]['events']} events), "
                  f"{out[mode]['seconds']:.1f} s = {out[mode]['sessions_per_min']:.0f} sessions/min")
            if after_first is not None and len(out) == 1:
                after_first()
    finally:
        shutil.rmtree(fast, ignore_errors=True)
    return out


def _dagster_mode(
    root: Path, sessions: dict, lance: Path, instance_dir: Path, how: str, embedder_kind: str, storage: dict | None = None
) -> dict:
    import dagster as dg

    from memory_pipeline.consolidation import defs as consolidation
    from memory_pipeline.consolidation.launch import run_consolidation
    from memory_pipeline.orchestration.partitions import SESSION_TENANTS_PARTITION
    from memory_pipeline.orchestration.resources import EmbedderResource, LanceDBResource, WorkspaceResource
    from memory_pipeline.orchestration.runs import range_tags, register_tenants

    uri = str(lance)
    defs = dg.Definitions(
        assets=consolidation.ASSETS, jobs=consolidation.JOBS,
        resources={"workspace": WorkspaceResource(root=str(root)), "lancedb": LanceDBResource(uri=uri),
                   "embedder": EmbedderResource(kind=embedder_kind)},
    )
    tenants = sorted(t.key for t in sessions)
    count = sum(len(v) for v in sessions.values())
    instance_dir.mkdir(parents=True, exist_ok=True)
    overrides = {"storage": storage} if storage else None
    with dg.instance_for_test(temp_dir=str(instance_dir), overrides=overrides) as instance:
        forget_parses()
        started = time.perf_counter()
        if how == "partition":
            results = [r for tenant in tenants for r in run_consolidation(defs, instance, [tenant])]
        elif how == "launch":
            results = run_consolidation(defs, instance, tenants)
        else:
            register_tenants(instance, tenants, SESSION_TENANTS_PARTITION)
            job = defs.resolve_job_def("consolidation_job")
            results = [job.execute_in_process(instance=instance, tags=range_tags(tenants[0], tenants[-1]), raise_on_error=True)]
        seconds = time.perf_counter() - started
        events = sum(len(instance.all_logs(r.run_id)) for r in results)
    assert all(r.success for r in results)
    return {"runs": len(results), "events": events, "sessions": count, "seconds": round(seconds, 2),
            "sessions_per_min": round(count / seconds * 60, 1)}


def main() -> None:
    parser = command_line(__doc__, "consolidate")
    parser.add_argument("--eval", default=str(DEFAULT_EVAL), help="the locomo-dev folder (read only)")
    parser.add_argument("--embedder", default="minilm", choices=["minilm", "hash"])
    parser.add_argument("--spacy-repeats", type=int, default=3, help="interleaved spaCy timings, best kept")
    parser.add_argument("--dagster-modes", default="all", choices=["all", "tmpfs", "backfill", "launch"],
                        help="'tmpfs' skips the run with the Dagster instance on disk; 'backfill' runs only "
                        "one backfill run over every tenant (instance on tmpfs); 'launch' the launch path "
                        "(run_consolidation, one run over the neighbouring tenants) on SQLite on tmpfs and on the local "
                        "PostgreSQL server, as production stores events (skipped without a server)")
    opts = parser.parse_args()
    eval_dir = Path(opts.eval).resolve()
    if not (eval_dir / "sessions").is_dir():
        sys.exit(f"no sessions folder in {eval_dir}: pass --eval <path to locomo-dev>")
    root, sessions = load_sessions(eval_dir)
    turns = [t.content for items in sessions.values() for s in items for t in s.transcript.turns]
    print(f"{sum(len(v) for v in sessions.values())} sessions of {len(sessions)} conversations, {len(turns)} turns")
    work = Path(tempfile.mkdtemp(prefix="mp-bench-consolidate-"))
    try:
        report = {
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
            "embedder": opts.embedder,
            "load_average_at_start": os.getloadavg(),
            "spacy": bench_spacy(turns, opts.spacy_repeats),
        }
        passes = [bench_functions(root, sessions, work / "lance-functions", opts.embedder)]
        report["dagster"] = bench_dagster(
            root, sessions, work / "lance-dagster", work / "home", opts.embedder, opts.dagster_modes,
            lambda: passes.append(bench_functions(root, sessions, work / "lance-functions-again", opts.embedder)),
        )
        report["functions"] = both_passes(*passes)
        plain = report["functions"]["sessions_per_min"]
        print(f"plain functions, mean of the passes before and after the first Dagster mode: {plain:.0f} sessions/min")
        for mode, m in report["dagster"].items():
            m["ratio_to_plain"] = round(m["sessions_per_min"] / plain, 3)
            print(f"Dagster, {mode:40s}: {m['ratio_to_plain']:.2f} of the plain functions")
        report["load_average_at_end"] = os.getloadavg()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    write_report(opts.out, report)


if __name__ == "__main__":
    main()
