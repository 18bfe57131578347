"""Recall latency benchmark: ``search`` on tenants of 10,000, 100,000 and 1,000,000 chunks.

Each generated tenant (half transcript turns, half Markdown chunks, text from a 3,000-word
vocabulary) is written straight into a fresh LanceDB ``chunks`` table, beside a small other
tenant, with the full-text and tenant indices the L0 job builds. Its vectors come from a
hierarchical mixture shaped like sentence embeddings: a few dozen topics, a subtopic per hundred
chunks (a thread or a note), and each chunk's own direction; same-subtopic chunks have a cosine
near 0.5, same-topic ones near 0.15, the rest near 0. Queries are new draws from the same
mixture, which is how the ANN index is judged (its recall@10 against the exact scan); the
generated words mean nothing to MiniLM, so MiniLM query vectors would measure nothing there.

Then, in one process and on the same vectors, p50/p95 of:

- ``search``: the whole recall path, the query's MiniLM embedding included;
- ``embed``: the query embedding alone, as ``search`` makes it (``embed_query``);
- ``retrieval``: ``search`` given the query's vector already computed (everything but the model);
- ``numpy``: a brute-force NumPy scan (matrix-vector product and top-k) over the tenant's vectors,
  the baseline every other figure is divided by;
- ``ann``: the IVF index ``search`` uses for tenants of ``ann_min_rows`` rows or more, alone, with
  its recall@10 against the exact scan;
- ``lancedb_flat``: LanceDB's own vector search over the table, filtered to the tenant;
- ``text``: the full-text channel ``search`` uses, alone: the tenant's in-memory BM25 index;
- ``fts``: LanceDB's full-text search alone, filtered to the tenant (what that channel replaced);
- ``cold``: the first search of a tenant, which loads its rows and builds its BM25 index (and
  its IVF index), writing them to disk (``recall/index/files.py``; tenants of 10,000 rows or
  more), with the RSS the tenant adds to the process;
- ``new process``: the first search of the tenant in a fresh process: reading the indices
  persisted by the cold search above (``recall/index/files.py``, memory-mapped) with the table as
  it was then, again after another tenant's write (the tenant's ids are read to check it did not
  change) and, as the baseline, with persistence off (read the rows from LanceDB and build every
  index), with the memory each adds (RSS, and USS: pages of the process's own, not the page
  cache's); all return the same results for every query as the process that built them
  (``recall_fresh.py``);
- ``embed`` by path: the query embedding through ONNX Runtime (what ``search`` uses), through
  the TorchScript trace and through ``encode`` (the baselines), and ``search`` through the
  TorchScript trace; both searches return the same results for every query;
- ``changed tenant``: after 1% new rows and 0.2% deleted ones, a new process's first search
  updating the persisted indices from the changed rows (``recall/index/update.py``) against
  rebuilding everything, as a ratio of the two.

    python bench/recall.py [--sizes 10000,100000,1000000] [--queries 200] [--quick]

``--quick`` (one tenant of 20,000 chunks) times neither ``search`` nor ``embed``, which load the
model, nor the new-process, embedding-path and changed-tenant figures: nothing guarded rests on them.
"""

from __future__ import annotations

import gc
import json
import os
import random
import resource
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench import command_line, host_steal_s, steal_since, work_offline, write_report  # noqa: E402

work_offline()

from memory_pipeline.config import Settings  # noqa: E402
from memory_pipeline.embedding import MiniLMEmbedder  # noqa: E402
from memory_pipeline.l0.store import ChunkIndex  # noqa: E402
from memory_pipeline.recall.search import embed_query, search  # noqa: E402
from memory_pipeline.recall.sources import ChunkSource, tenant_cache  # noqa: E402
from memory_pipeline.store.base import sql_str  # noqa: E402
from memory_pipeline.store.tables import CHUNKS  # noqa: E402

from bench.recall_fresh import (  # noqa: E402
    EncodeEmbedder,
    TorchScriptEmbedder,
    changed_tenant_first_search,
    new_process_first_search,
    other_tenant_write,
    result_ids,
)

AGENT = "bench"
DIM = 384
TOPICS = 48
CHUNKS_PER_SUBTOPIC = 100
TURNS_PER_FILE = 50
WRITE_SLICE = 50_000
# Shares of a vector's energy: topic, subtopic, the chunk's own direction.
TOPIC_SHARE, SUBTOPIC_SHARE, OWN_SHARE = 0.15, 0.35, 0.50


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


class Mixture:
    """Topics -> subtopics -> chunks, as unit vectors; ``draw`` samples chunks (or queries)."""

    def __init__(self, n: int, seed: int):
        rng = np.random.default_rng(seed)
        self.topics = _unit(rng.normal(size=(TOPICS, DIM)))
        subtopics = max(TOPICS, n // CHUNKS_PER_SUBTOPIC)
        self.topic_of = rng.integers(0, TOPICS, size=subtopics)
        self.subtopics = _unit(rng.normal(size=(subtopics, DIM)))

    def draw(self, count: int, rng: np.random.Generator) -> np.ndarray:
        sub = rng.integers(0, len(self.subtopics), size=count)
        own = _unit(rng.standard_normal(size=(count, DIM), dtype=np.float32))
        x = (
            np.sqrt(TOPIC_SHARE) * self.topics[self.topic_of[sub]]
            + np.sqrt(SUBTOPIC_SHARE) * self.subtopics[sub]
            + np.sqrt(OWN_SHARE) * own
        )
        return _unit(x)


def vocabulary(rng: random.Random, size: int = 3000) -> list[str]:
    syllables = ["ka", "lo", "mi", "ren", "to", "sa", "vel", "dor", "qui", "ne", "bar", "is", "um", "tra", "po"]
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def texts(rng: np.random.Generator, vocab: list[str], count: int) -> list[str]:
    """``count`` texts of 12-29 Zipf-distributed words."""
    lengths = rng.integers(12, 30, size=count)
    ranks = np.minimum(rng.zipf(1.3, size=int(lengths.sum())), len(vocab)) - 1
    words = np.array(vocab, dtype=object)[ranks]
    bounds = np.concatenate([[0], np.cumsum(lengths)])
    return [" ".join(words[bounds[i] : bounds[i + 1]]) for i in range(count)]


def tenant_slices(user: str, n: int, seed: int, vocab: list[str], mixture: Mixture):
    """The tenant's rows as Arrow tables of at most WRITE_SLICE rows (never all in memory)."""
    rng = np.random.default_rng(seed + 1)
    tenant = f"{AGENT}~{user}"
    schema = CHUNKS.schema(DIM)
    now = datetime.now(UTC)
    half = n // 2
    for lo in range(0, n, WRITE_SLICE):
        idx = np.arange(lo, min(n, lo + WRITE_SLICE))
        m = len(idx)
        session = idx < half
        file_no = np.where(session, idx // TURNS_PER_FILE, (idx - half) // 20)
        line = np.where(session, idx % TURNS_PER_FILE, ((idx - half) % 20) * 5)
        paths = [
            f"{AGENT}/sessions/{user}/s{f:06d}.jsonl" if s else f"{AGENT}/users/{user}/memory/note{f:06d}.md"
            for s, f in zip(session.tolist(), file_no.tolist())
        ]
        body = texts(rng, vocab, m)
        text = [
            f"{'user' if ln % 2 else 'assistant'} (2026-11-01 10:{ln % 60:02d}): {t}" if s else t
            for s, ln, t in zip(session.tolist(), line.tolist(), body)
        ]
        ids = [f"{user}-{i}" for i in idx.tolist()]
        vectors = mixture.draw(m, rng)
        yield pa.table(
            {
                "id": ids,
                "tenant": [tenant] * m,
                "agent_id": [AGENT] * m,
                "user_id": [user] * m,
                "path": paths,
                "source": np.where(session, "sessions", "memory").tolist(),
                "start_line": pa.array(line + 1, pa.int32()),
                "end_line": pa.array(np.where(session, line + 1, line + 5), pa.int32()),
                "heading": pa.nulls(m, pa.string()),
                "turn_ids": [[f"s{f}:{ln}"] if s else [] for s, f, ln in zip(session.tolist(), file_no.tolist(), line.tolist())],
                "text": text,
                "text_hash": [f"h-{x}" for x in ids],
                "file_hash": ["f"] * m,
                "model": ["all-MiniLM-L6-v2"] * m,
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIM),
                "file_date": pa.nulls(m, pa.date32()),
                "ts_start": pa.array([now if s else None for s in session.tolist()], pa.timestamp("us", tz="UTC")),
                "updated_at": pa.array([now] * m, pa.timestamp("us", tz="UTC")),
            },
            schema=schema,
        )


class PrecomputedEmbedder:
    """Hands ``search`` a vector chosen beforehand for each query text."""

    name, dim = "all-MiniLM-L6-v2", DIM

    def __init__(self, vectors: dict[str, np.ndarray]):
        self.vectors = vectors

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.vectors[t] for t in texts])

    def count_tokens(self, text: str) -> int:
        return len(text.split())


class Timings(list):
    """Seconds per item of one timed pass, with the CPU seconds the host took meanwhile."""

    host_steal_s: float | None = None


def percentiles(samples: Timings) -> dict[str, float]:
    ms = np.array(samples) * 1000
    out = {"p50": round(float(np.percentile(ms, 50)), 3), "p95": round(float(np.percentile(ms, 95)), 3), "n": len(samples)}
    if samples.host_steal_s is not None:
        out["host_steal_s"] = samples.host_steal_s
    return out


def timed(fn, items) -> tuple[Timings, list]:
    times, outs = Timings(), []
    steal = host_steal_s()
    for item in items:
        t0 = time.perf_counter()
        outs.append(fn(item))
        times.append(time.perf_counter() - t0)
    times.host_steal_s = steal_since(steal)
    return times, outs


def rss_mb() -> float:
    try:
        import psutil

        return psutil.Process().memory_info().rss / 2**20
    except ImportError:  # pragma: no cover
        return float("nan")


def bench_size(size, uri, settings, embedder, queries, mixture, lancedb_queries, workdir, quick=False, vocab=None) -> dict:
    user = f"t{size}"
    tenant = f"{AGENT}~{user}"
    cfg = settings.recall
    qvecs = mixture.draw(len(queries), np.random.default_rng(10_000 + size))
    fixed = PrecomputedEmbedder(dict(zip(queries, qvecs)))
    rss_before = rss_mb()
    t0 = time.perf_counter()
    first = search(queries[0], AGENT, user, store=uri, embedder=fixed, settings=settings, min_score=0)
    cold_s = time.perf_counter() - t0
    # What the tenant costs the process once searched: its rows, IVF (large tenants) and BM25.
    tenant_rss = rss_mb() - rss_before
    assert first and all(r.tenant == tenant for r in first), "search returned another tenant's rows"
    rows = tenant_cache(uri).rows(ChunkSource(), tenant)
    uses_ann = bool(cfg.ann_min_rows and len(rows) >= cfg.ann_min_rows)

    # The query embedding and its baselines: the quick mode leaves them out (nothing guarded on
    # them, and loading the model is most of its time); ``retrieval`` below searches all the same.
    paths = {}
    if not quick:
        search_t, onnx_out = timed(lambda q: search(q, AGENT, user, store=uri, embedder=embedder, settings=settings, min_score=0), queries)
        embed_t, _ = timed(lambda q: embed_query(embedder, q, cfg.query_threads), queries)
        traced, encoder = TorchScriptEmbedder(), EncodeEmbedder()
        traced.embed_query(queries[0])  # trace before timing
        search_traced_t, traced_out = timed(lambda q: search(q, AGENT, user, store=uri, embedder=traced, settings=settings, min_score=0), queries)
        embed_traced_t, _ = timed(lambda q: embed_query(traced, q, cfg.query_threads), queries)
        embed_encode_t, _ = timed(lambda q: embed_query(encoder, q, cfg.query_threads), queries[:50])
        paths = {
            "search": percentiles(search_t),
            "embed": percentiles(embed_t),
            "embed_torchscript": percentiles(embed_traced_t),
            "embed_encode": percentiles(embed_encode_t),
            "search_torchscript": percentiles(search_traced_t),
            "onnx_results_identical_to_torchscript": result_ids(onnx_out) == result_ids(traced_out),
        }
    retrieval_t, retrieved = timed(lambda q: search(q, AGENT, user, store=uri, embedder=fixed, settings=settings, min_score=0), queries)
    # The first search in a new process: from the persisted indices, and rebuilt (the baseline).
    # The quick mode leaves them out: two more processes, and no ratio guarded on them.
    here = result_ids(retrieved)
    persisted = rebuilt = after_write = None
    if not quick:
        persisted = new_process_first_search(size, uri, settings, queries, qvecs, True, workdir)
        rebuilt = new_process_first_search(size, uri, settings, queries, qvecs, False, workdir)
        other_tenant_write(uri, vocab, Mixture(2000, 1))
        after_write = new_process_first_search(size, uri, settings, queries, qvecs, True, workdir)
    text_index = rows.text_index()
    text_t, _ = timed(lambda q: text_index.top(q, cfg.candidates), queries)

    # The IVF index, on every size, so its recall is known before a tenant grows into it.
    t0 = time.perf_counter()
    ann = rows.ann_index(cfg.ann_lists)
    ann_build_s = time.perf_counter() - t0 if not uses_ann else None
    # The baseline: a brute-force scan of the same vectors (the IVF holds them grouped by list).
    matrix = ann.grouped

    def numpy_scan(qv):
        scores = matrix @ qv
        top = np.argpartition(-scores, 10)[:10]
        return ann.order[top[np.argsort(-scores[top])]]

    numpy_t, exact = timed(numpy_scan, qvecs)
    ann_t, ann_out = timed(lambda qv: ann.search(qv, 10, cfg.ann_nprobe), qvecs)
    recall10 = [
        len(set(ids.tolist()) & set(truth.tolist())) / 10 for (ids, _), truth in zip(ann_out, exact)
    ]
    sweep = {}
    for nprobe in (1, 2, 4, 8, 16, 32, 64):
        sweep_t, sweep_out = timed(lambda qv: ann.search(qv, 10, nprobe), qvecs[:50])
        found = [len(set(ids.tolist()) & set(truth.tolist())) / 10 for (ids, _), truth in zip(sweep_out, exact)]
        sweep[nprobe] = {"recall_at_10": round(float(np.mean(found)), 4), "p50": percentiles(sweep_t)["p50"]}
    lance_table = tenant_cache(uri).table("chunks")
    where = f"tenant = {sql_str(tenant)}"
    lance_t, _ = timed(
        lambda qv: lance_table.search(qv).where(where, prefilter=True).select(["id", "_distance"]).limit(10).to_arrow(),
        qvecs[:lancedb_queries],
    )
    fts_t, _ = timed(
        lambda q: lance_table.search(q, query_type="fts").where(where, prefilter=True).select(["id", "_score"]).limit(50).to_arrow(),
        queries,
    )
    entry = {
        "rows": len(rows),
        "path": f"IVF ({ann.lists} lists, nprobe {cfg.ann_nprobe})" if uses_ann else "exact in-memory scan",
        "retrieval": percentiles(retrieval_t),
        "numpy": percentiles(numpy_t),
        "ann": {**percentiles(ann_t), "lists": ann.lists, "nprobe": cfg.ann_nprobe,
                "recall_at_10": round(float(np.mean(recall10)), 4),
                "recall_at_10_min": round(float(np.min(recall10)), 2),
                "build_s": round(ann_build_s, 2) if ann_build_s is not None else "in cold search",
                "nprobe_sweep": sweep},
        "text": percentiles(text_t),
        "lancedb_flat": percentiles(lance_t),
        "fts": percentiles(fts_t),
        "cold_first_search_s": round(cold_s, 2),
        "tenant_rss_mb": round(tenant_rss, 1),
        **paths,
    }
    if persisted is not None:
        entry["new_process"] = {
            "persisted": {k: v for k, v in persisted.items() if k != "ids"},
            "persisted_after_another_tenants_write": {k: v for k, v in after_write.items() if k != "ids"},
            "rebuilt": {k: v for k, v in rebuilt.items() if k != "ids"},
            "results_identical": persisted["ids"] == here and rebuilt["ids"] == here and after_write["ids"] == here,
        }
    entry["ratios"] = {
        "retrieval_p95_over_numpy_p95": round(entry["retrieval"]["p95"] / entry["numpy"]["p95"], 2),
        "ann_p95_over_numpy_p95": round(entry["ann"]["p95"] / entry["numpy"]["p95"], 3),
        "lancedb_flat_p95_over_numpy_p95": round(entry["lancedb_flat"]["p95"] / entry["numpy"]["p95"], 1),
        "text_p95_over_lancedb_fts_p95": round(entry["text"]["p95"] / entry["fts"]["p95"], 3),
        "ann_recall_at_10_vs_exact": entry["ann"]["recall_at_10"],
    }
    if paths:
        entry["ratios"].update({
            "search_p95_over_numpy_p95": round(entry["search"]["p95"] / entry["numpy"]["p95"], 2),
            "embed_onnx_p95_over_torchscript_p95": round(entry["embed"]["p95"] / entry["embed_torchscript"]["p95"], 3),
            "embed_onnx_p95_over_encode_p95": round(entry["embed"]["p95"] / entry["embed_encode"]["p95"], 3),
            "search_p95_over_search_torchscript_p95": round(entry["search"]["p95"] / entry["search_torchscript"]["p95"], 3),
        })
    if persisted is not None:
        entry["ratios"]["new_process_first_search_persisted_over_rebuilt"] = round(
            persisted["first_search_s"] / rebuilt["first_search_s"], 3)
        # Last: it changes the tenant.
        changed = entry["changed_tenant"] = changed_tenant_first_search(
            size, uri, settings, queries, qvecs, workdir, vocab, mixture)
        entry["ratios"]["changed_tenant_first_search_incremental_over_rebuilt"] = round(
            changed["incremental"]["first_search_s"] / changed["rebuilt"]["first_search_s"], 3)
    return entry


def main() -> None:
    ap = command_line(__doc__, "recall")
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--lancedb-queries", type=int, default=20, help="LanceDB flat scans are slow; fewer.")
    ap.add_argument("--quick", action="store_true", help="one tenant of 20,000 chunks, 40 queries, no query embedding.")
    args = ap.parse_args()
    sizes = [20_000] if args.quick else [int(s) for s in args.sizes.split(",")]
    n_queries = 40 if args.quick else args.queries

    vocab = vocabulary(random.Random(7))
    workdir = tempfile.mkdtemp(prefix="recall-bench-")
    uri = str(Path(workdir) / "lancedb")
    store = ChunkIndex(uri, dim=DIM)
    table = store.chunks()
    mixtures = {size: Mixture(size, size) for size in sizes}
    started = time.perf_counter()
    for part in tenant_slices("other", 2000, 1, vocab, Mixture(2000, 1)):
        table.add(part)
    for size in sizes:
        for part in tenant_slices(f"t{size}", size, size, vocab, mixtures[size]):
            table.add(part)
    write_s = time.perf_counter() - started
    t0 = time.perf_counter()
    store.ensure_fts_index()
    index_s = time.perf_counter() - t0
    print(f"wrote {sum(sizes) + 2000:,} rows in {write_s:.1f} s; full-text + tenant indices in {index_s:.1f} s", flush=True)

    settings = Settings(root=workdir, lancedb_uri=uri, embedder="minilm")
    if args.quick:  # the quick tenant is below ann_min_rows: search goes through the IVF anyway
        settings = settings.model_copy(update={"recall": settings.recall.model_copy(update={"ann_min_rows": 10_000})})
    qrng = np.random.default_rng(11)
    queries = [" ".join(texts(qrng, vocab, 1)[0].split()[:4]) + f" q{i}" for i in range(n_queries)]
    embedder = None
    if not args.quick:
        embedder = MiniLMEmbedder()
        embedder.embed(queries[:2])  # load and warm the model
        embedder.embed_query(queries[0])  # and its ONNX export (made once, then cached)

    report: dict = {
        "quick": args.quick,
        "load_average_at_start": os.getloadavg(),
        "nice": os.nice(0),
        "rows_total": sum(sizes) + 2000,
        "write_s": round(write_s, 2),
        "index_s": round(index_s, 2),
        "settings": {"ann_min_rows": settings.recall.ann_min_rows, "ann_nprobe": settings.recall.ann_nprobe,
                     "ann_lists": settings.recall.ann_lists or "sqrt(rows)", "candidates": settings.recall.candidates},
        "sizes": {},
    }
    for size in sizes:
        lance_q = max(3, min(args.lancedb_queries, 2_000_000 // size))
        entry = bench_size(size, uri, settings, embedder, queries, mixtures[size], lance_q, workdir, args.quick, vocab)
        report["sizes"][str(size)] = entry
        print(f"\n{size:,} chunks, {entry['path']}; cold first search {entry['cold_first_search_s']} s, "
              f"tenant in memory +{entry['tenant_rss_mb']:.0f} MB", flush=True)
        for name in ("search", "search_torchscript", "embed", "embed_torchscript", "embed_encode", "retrieval", "text",
                     "numpy", "ann", "lancedb_flat", "fts"):
            if name not in entry:
                continue
            p = entry[name]
            print(f"  {name:13s} p50 {p['p50']:9.2f} ms  p95 {p['p95']:9.2f} ms  (n={p['n']})")
        print(f"  ANN recall@10 vs exact scan: {entry['ann']['recall_at_10']} (worst query {entry['ann']['recall_at_10_min']})")
        print("  recall@10 by nprobe: " + ", ".join(f"{k}: {v['recall_at_10']}" for k, v in entry["ann"]["nprobe_sweep"].items()))
        fresh = entry.get("new_process")
        if fresh:
            print(f"  first search in a new process: persisted {fresh['persisted']}, after another tenant's write "
                  f"{fresh['persisted_after_another_tenants_write']}, rebuilt {fresh['rebuilt']}; "
                  f"same results: {fresh['results_identical']}")
            print(f"  after 1% new rows and 0.2% deleted: {entry['changed_tenant']}")
        if "onnx_results_identical_to_torchscript" in entry:
            print(f"  ONNX vs TorchScript query vectors, same results: {entry['onnx_results_identical_to_torchscript']}")
        print("  ratios: " + ", ".join(f"{k} {v}" for k, v in entry["ratios"].items()), flush=True)
        tenant_cache(uri)._rows.clear()  # free the tenant before the next, bigger one
        gc.collect()
    report["load_average_at_end"] = os.getloadavg()
    report["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    shutil.rmtree(workdir, ignore_errors=True)  # 1.8 GB at 1M chunks
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    if Path(args.out).exists():  # bench/recall_object_store.py's figures, kept beside these
        kept = json.loads(Path(args.out).read_text()).get("object_storage")
        if kept:
            report["object_storage"] = kept
    print()
    write_report(args.out, report)


if __name__ == "__main__":
    main()
