"""Recall latency benchmark: ``search`` on tenants of 10,000 and 100,000 chunks.

Generated tenants (half transcript turns, half Markdown chunks; clustered synthetic unit vectors
and text from a 3,000-word vocabulary) are written straight into a fresh LanceDB ``chunks`` table
beside a small other tenant, with the full-text and tenant indices the L0 job builds. Then, in
one process and on the same vectors:

- ``search``: the whole recall path, query embedding (all-MiniLM-L6-v2) included;
- ``embed``: the query embedding alone;
- ``retrieval``: ``search`` given the query's vector already computed (everything but the model);
- ``numpy``: a brute-force NumPy scan (matrix-vector product and top-k) over the tenant's vectors;
- ``lancedb_flat``: LanceDB's own vector search over the table, filtered to the tenant;
- ``fts``: LanceDB's full-text search alone, filtered to the tenant;
- ``ann``: the IVF index ``search`` uses for tenants of ``ann_min_rows`` rows or more (built at
  the tenant's first search), with its recall@6 and @50 against the exact scan, on queries near
  the data (a stored vector plus noise; the generated texts do not mean what MiniLM reads);
- ``cold``: the first search of a tenant, which loads its rows into the in-memory cache.

Prints p50/p95 in milliseconds with ratios, and writes ``bench/results/recall.json``.

    python bench/recall.py [--sizes 10000,100000] [--queries 200] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from memory_pipeline.config import Settings  # noqa: E402
from memory_pipeline.embedding import MiniLMEmbedder  # noqa: E402
from memory_pipeline.recall.search import search  # noqa: E402
from memory_pipeline.recall.sources import ChunkSource, tenant_cache  # noqa: E402
from memory_pipeline.store.lance import MemoryStore, chunks_schema, sql_str  # noqa: E402

AGENT = "bench"
DIM = 384
CLUSTERS = 400
TURNS_PER_FILE = 50


def vocabulary(rng: random.Random, size: int = 3000) -> list[str]:
    syllables = ["ka", "lo", "mi", "ren", "to", "sa", "vel", "dor", "qui", "ne", "bar", "is", "um", "tra", "po"]
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def zipf_words(rng: np.random.Generator, vocab: list[str], count: int) -> list[str]:
    ranks = np.minimum(rng.zipf(1.3, size=count), len(vocab)) - 1
    return [vocab[r] for r in ranks]


def generate_rows(tenant_user: str, n: int, seed: int, vocab: list[str]) -> pa.Table:
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(CLUSTERS, DIM)).astype(np.float32)
    assignment = rng.integers(0, CLUSTERS, size=n)
    vectors = centers[assignment] + 0.6 * rng.normal(size=(n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    now = datetime.now(UTC)
    half = n // 2
    ids, sources, paths, starts, turn_ids, texts = [], [], [], [], [], []
    for i in range(n):
        words = zipf_words(rng, vocab, int(rng.integers(12, 30)))
        if i < half:
            file, line = divmod(i, TURNS_PER_FILE)
            sources.append("sessions")
            paths.append(f"{AGENT}/sessions/{tenant_user}/s{file:05d}.jsonl")
            starts.append(line + 1)
            turn_ids.append([f"s{file}:{line}"])
            texts.append(f"{'user' if line % 2 else 'assistant'} (2026-11-01 10:{line % 60:02d}): " + " ".join(words))
        else:
            file, chunk = divmod(i - half, 20)
            sources.append("memory")
            paths.append(f"{AGENT}/users/{tenant_user}/memory/note{file:05d}.md")
            starts.append(chunk * 5 + 1)
            turn_ids.append([])
            texts.append(" ".join(words))
        ids.append(f"{tenant_user}-{i}")
    tenant = f"{AGENT}~{tenant_user}"
    schema = chunks_schema(DIM)
    return pa.table(
        {
            "id": ids,
            "tenant": [tenant] * n,
            "agent_id": [AGENT] * n,
            "user_id": [tenant_user] * n,
            "path": paths,
            "source": sources,
            "start_line": pa.array(starts, pa.int32()),
            "end_line": pa.array([s + (0 if src == "sessions" else 4) for s, src in zip(starts, sources)], pa.int32()),
            "heading": [None] * n,
            "turn_ids": turn_ids,
            "text": texts,
            "text_hash": [f"h-{x}" for x in ids],
            "file_hash": ["f"] * n,
            "model": ["all-MiniLM-L6-v2"] * n,
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIM),
            "file_date": pa.array([None] * n, pa.date32()),
            "ts_start": pa.array([now if s == "sessions" else None for s in sources], pa.timestamp("us", tz="UTC")),
            "updated_at": pa.array([now] * n, pa.timestamp("us", tz="UTC")),
        },
        schema=schema,
    )


class PrecomputedEmbedder:
    """Hands ``search`` vectors computed beforehand, to time recall without the model."""

    name, dim = "all-MiniLM-L6-v2", DIM

    def __init__(self, vectors: dict[str, np.ndarray]):
        self.vectors = vectors

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.vectors[t] for t in texts])

    def count_tokens(self, text: str) -> int:
        return len(text.split())


def percentiles(samples: list[float]) -> dict[str, float]:
    ms = np.array(samples) * 1000
    return {"p50": round(float(np.percentile(ms, 50)), 2), "p95": round(float(np.percentile(ms, 95)), 2), "n": len(samples)}


def timed(fn, args_list) -> tuple[list[float], list]:
    times, outs = [], []
    for args in args_list:
        t0 = time.perf_counter()
        outs.append(fn(*args))
        times.append(time.perf_counter() - t0)
    return times, outs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--lancedb-queries", type=int, default=30, help="LanceDB flat scans are slow; fewer.")
    ap.add_argument("--quick", action="store_true", help="2,000 and 10,000 chunks, 40 queries.")
    ap.add_argument("--out", default=str(HERE / "results" / "recall.json"))
    args = ap.parse_args()
    sizes = [2000, 10000] if args.quick else [int(s) for s in args.sizes.split(",")]
    n_queries = 40 if args.quick else args.queries

    rng = random.Random(7)
    vocab = vocabulary(rng)
    workdir = tempfile.mkdtemp(prefix="recall-bench-")
    uri = str(Path(workdir) / "lancedb")
    store = MemoryStore(uri, dim=DIM)
    table = store.chunks()
    started = time.perf_counter()
    table.add(generate_rows("other", 2000, 1, vocab))
    for size in sizes:
        data = generate_rows(f"t{size}", size, size, vocab)
        for lo in range(0, size, 20000):
            table.add(data.slice(lo, 20000))
    write_s = time.perf_counter() - started
    t0 = time.perf_counter()
    store.ensure_fts_index()
    index_s = time.perf_counter() - t0
    print(f"wrote {sum(sizes) + 2000} rows in {write_s:.1f} s; full-text + tenant indices in {index_s:.1f} s")

    embedder = MiniLMEmbedder()
    settings = Settings(root=workdir, lancedb_uri=uri, embedder="minilm")
    qrng = np.random.default_rng(11)
    queries = [" ".join(zipf_words(qrng, vocab, 3) + [vocab[int(qrng.integers(0, 300))]]) for _ in range(n_queries)]
    embedder.embed(queries[:2])  # load and warm the model

    report: dict = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
                    "load_average_at_start": os.getloadavg()},
        "rows_total": sum(sizes) + 2000, "write_s": round(write_s, 2), "index_s": round(index_s, 2), "sizes": {},
    }
    source = ChunkSource()
    for size in sizes:
        user = f"t{size}"
        tenant = f"{AGENT}~{user}"
        t0 = time.perf_counter()
        first = search(queries[0], AGENT, user, store=uri, embedder=embedder, settings=settings, min_score=0)
        cold_s = time.perf_counter() - t0
        assert first and all(r.tenant == tenant for r in first)
        search_t, _ = timed(lambda q: search(q, AGENT, user, store=uri, embedder=embedder, settings=settings, min_score=0), [(q,) for q in queries])
        embed_t, qvecs = timed(lambda q: embedder.embed([q])[0], [(q,) for q in queries])
        fixed = PrecomputedEmbedder(dict(zip(queries, qvecs)))
        retrieval_t, _ = timed(lambda q: search(q, AGENT, user, store=uri, embedder=fixed, settings=settings, min_score=0), [(q,) for q in queries])
        rows = tenant_cache(uri).rows(source, tenant)
        matrix = rows.vectors

        def numpy_scan(qv):
            scores = matrix @ qv
            top = np.argpartition(-scores, 6)[:6]
            return top[np.argsort(-scores[top])]

        numpy_t, exact = timed(numpy_scan, [(qv,) for qv in qvecs])
        ann_entry = None
        cfg = settings.recall
        if cfg.ann_min_rows and len(matrix) >= cfg.ann_min_rows:
            nrng = np.random.default_rng(5)
            near = matrix[nrng.choice(len(matrix), size=len(queries), replace=False)]
            near = near + 0.05 * nrng.normal(size=near.shape).astype(np.float32)
            near /= np.linalg.norm(near, axis=1, keepdims=True)
            ann = rows.ann_index(cfg.ann_lists)
            ann_t, ann_out = timed(lambda qv: ann.search(qv, 50, cfg.ann_nprobe), [(qv,) for qv in near])
            recalls = {6: [], 50: []}
            for qv, (ids, scores) in zip(near, ann_out):
                truth = np.argsort(-(matrix @ qv))[:50]
                got = ids[np.argsort(-scores)]
                for k in recalls:
                    recalls[k].append(len(set(truth[:k].tolist()) & set(got[:k].tolist())) / k)
            ann_entry = {
                "lists": ann.lists, "nprobe": cfg.ann_nprobe, **percentiles(ann_t),
                "recall_at_6": round(float(np.mean(recalls[6])), 3), "recall_at_50": round(float(np.mean(recalls[50])), 3),
            }
        lance_table = tenant_cache(uri).table("chunks")
        where = f"tenant = {sql_str(tenant)}"

        def lance_flat(qv):
            return lance_table.search(qv).where(where, prefilter=True).select(["id"]).limit(6).to_arrow()

        lance_t, _ = timed(lance_flat, [(qv,) for qv in qvecs[: args.lancedb_queries]])

        def fts(q):
            return lance_table.search(q, query_type="fts").where(where, prefilter=True).select(["id", "_score"]).limit(50).to_arrow()

        fts_t, _ = timed(fts, [(q,) for q in queries])
        entry = {
            "search": percentiles(search_t),
            "embed": percentiles(embed_t),
            "retrieval": percentiles(retrieval_t),
            "numpy": percentiles(numpy_t),
            "lancedb_flat": percentiles(lance_t),
            "fts": percentiles(fts_t),
            "cold_first_search_ms": round(cold_s * 1000, 1),
            "index": "IVF (NumPy)" if ann_entry else "exact in-memory scan",
            "ann": ann_entry,
        }
        entry["ratios"] = {
            "search_p95_over_numpy_p95": round(entry["search"]["p95"] / max(entry["numpy"]["p95"], 1e-9), 1),
            "retrieval_p95_over_numpy_p95": round(entry["retrieval"]["p95"] / max(entry["numpy"]["p95"], 1e-9), 1),
            "lancedb_flat_p95_over_numpy_p95": round(entry["lancedb_flat"]["p95"] / max(entry["numpy"]["p95"], 1e-9), 1),
            "lancedb_flat_p95_over_search_p95": round(entry["lancedb_flat"]["p95"] / max(entry["search"]["p95"], 1e-9), 1),
        }
        report["sizes"][str(size)] = entry
        print(f"\n{size:,} chunks (tenant {tenant}); cold first search {entry['cold_first_search_ms']} ms")
        for name in ("search", "embed", "retrieval", "numpy", "lancedb_flat", "fts"):
            p = entry[name]
            print(f"  {name:13s} p50 {p['p50']:8.2f} ms  p95 {p['p95']:8.2f} ms  (n={p['n']})")
        if ann_entry:
            print(f"  ann (IVF {ann_entry['lists']} lists, nprobe {ann_entry['nprobe']}) p50 {ann_entry['p50']} ms p95 {ann_entry['p95']} ms, "
                  f"recall@6 {ann_entry['recall_at_6']} recall@50 {ann_entry['recall_at_50']} vs exact")
        print("  ratios: " + ", ".join(f"{k} {v}x" for k, v in entry["ratios"].items()))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2))
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
