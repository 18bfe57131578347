"""Memory benchmark: peak RSS of an L0 ingest of up to 1,000,000 chunks.

The L0 path embeds in blocks of ``EMBED_BLOCK`` texts straight into the embedding cache and
writes each tenant by streaming Arrow batches of ``WRITE_BATCH`` rows, each with its vectors read
back from the cache, into one commit. So no more than one block of vectors should be held in
Python at once, whatever the number of chunks. This benchmark checks that with a measured RSS.

Real MiniLM embeddings of a million chunks would take about 10 hours here, so the vectors come
from a stand-in embedder of the same size (384 floats, unit length, random, microseconds per
block): what is measured is the memory the pipeline holds, not the model's. The workspace is
generated transcripts (one chunk per turn, every turn distinct) over several tenants, and the
run calls the functions the L0 assets are thin wrappers of (``prepare_tenant``,
``embed_tenants``, ``write_tenant``, ``ensure_fts_index``), in one process, as one Dagster run
over all tenants would, without Dagster's pickled hand-over between steps.

A sampling thread records RSS every 50 ms and the peak of each phase; the embedding step's final
compaction of the cache is sampled as its own phase (its seconds are also part of "embed"). The figure that matters is
how far RSS rises during embedding and writing above its level after chunking, compared with
the size of all the run's vectors held at once (chunks x 384 x 4 bytes). The size of the LanceDB
folder at the end (by table) shows what the run left on disk, old versions included. glibc's
``MALLOC_ARENA_MAX`` and ``MEMORY_PIPELINE_LANCE_CACHE_MB`` (bounded LanceDB caches), when set,
are recorded with the results: both change the native figures.

    python bench/memory.py [--chunks 1000000] [--tenants 10]
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import shutil
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path

import numpy as np
import psutil

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench import command_line, write_report  # noqa: E402
from bench.report import memory_summary  # noqa: E402

TURNS_PER_FILE = 1000
DIM = 384


class StandInEmbedder:
    """Unit vectors of the real model's size, random but fixed by each block's first text."""

    name = "stand-in-384"
    dim = DIM

    def embed(self, texts: list[str]) -> np.ndarray:
        seed = int.from_bytes(hashlib.blake2b(texts[0].encode(), digest_size=8).digest(), "little") if texts else 0
        x = np.random.default_rng(seed).standard_normal((len(texts), DIM), dtype=np.float32)
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        return x

    def count_tokens(self, text: str) -> int:
        return len(text.split())


class RssSampler(threading.Thread):
    """Samples this process's RSS; ``phase`` names the part of the run being sampled."""

    def __init__(self, interval: float = 0.05):
        super().__init__(daemon=True)
        self.proc = psutil.Process()
        self.interval = interval
        self.phase = "start"
        self.peaks: dict[str, float] = {}
        self.ends: dict[str, float] = {}
        self.python_peaks: dict[str, float] = {}  # tracemalloc: Python objects and NumPy arrays
        self.stop = threading.Event()

    def sample(self) -> float:
        rss = self.proc.memory_info().rss / 2**20
        self.peaks[self.phase] = max(self.peaks.get(self.phase, 0.0), rss)
        return rss

    def enter(self, phase: str) -> None:
        self.ends[self.phase] = self.sample()
        if tracemalloc.is_tracing():
            self.python_peaks[self.phase] = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.reset_peak()
        self.phase = phase
        self.sample()

    def run(self) -> None:
        while not self.stop.wait(self.interval):
            self.sample()


def folder_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def generate(root: Path, chunks: int, tenants: int) -> dict:
    files = max(1, chunks // TURNS_PER_FILE)
    total = 0
    for f in range(files):
        tenant = f % tenants
        path = root / "bench" / "sessions" / f"user{tenant:02d}" / f"s{f:05d}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        turns = min(TURNS_PER_FILE, chunks - f * TURNS_PER_FILE)
        lines = [
            json.dumps({
                "role": "user" if i % 2 else "assistant",
                "content": f"Turn {i} of session {f}: the deploy of service {f % 97} moved to slot {i % 13}, "
                           f"and ticket {f * TURNS_PER_FILE + i} tracks the follow-up.",
                "ts": f"2026-11-{1 + f % 28:02d}T{(i // 60) % 24:02d}:{i % 60:02d}:00Z",
                "turn_id": f"t{i}",
            })
            for i in range(turns)
        ]
        text = "\n".join(lines) + "\n"
        path.write_text(text)
        total += len(text)
    return {"files": files, "bytes": total}


def run(chunks: int, tenants: int) -> dict:
    from memory_pipeline.config import Settings
    from memory_pipeline.l0.pipeline import EMBED_BLOCK, WRITE_BATCH, embed_tenants, prepare_tenant, write_tenant
    from memory_pipeline.l0.store import ChunkIndex
    from memory_pipeline.sources.workspace import scan_workspace

    work = Path(tempfile.mkdtemp(prefix="mp-bench-memory-"))
    sampler = RssSampler()
    sampler.start()
    timings: dict[str, float] = {}
    try:
        root = work / "agents"
        t0 = time.perf_counter()
        info = generate(root, chunks, tenants)
        timings["generate"] = time.perf_counter() - t0
        settings = Settings(root=str(root), lancedb_uri=str(work / "lancedb"), embedder="hash")
        store = ChunkIndex(work / "lancedb", dim=DIM)
        embedder = StandInEmbedder()
        sampler.enter("prepare")
        t0 = time.perf_counter()
        scan = scan_workspace(root)
        batches = [prepare_tenant(store, root, t, settings, embedder.name, files=scan.files[t]) for t in scan.tenants]
        timings["prepare"] = time.perf_counter() - t0
        prepared = sum(b.chunks.height for b in batches)
        # From here on, tracemalloc counts what Python holds (NumPy arrays included; Arrow and
        # LanceDB buffers are native and only show in RSS).
        tracemalloc.start()
        compact = store.compact_cache

        def compact_phase(*args, **kwargs):  # the embedding step ends by compacting the cache
            sampler.enter("compact")
            t1 = time.perf_counter()
            try:
                return compact(*args, **kwargs)
            finally:
                timings["compact"] = time.perf_counter() - t1

        store.compact_cache = compact_phase
        sampler.enter("embed")
        t0 = time.perf_counter()
        report = embed_tenants(batches, embedder, store)
        timings["embed"] = time.perf_counter() - t0
        sampler.enter("write")
        t0 = time.perf_counter()
        for batch in batches:
            write_tenant(store, batch, embedder.name)
        timings["write"] = time.perf_counter() - t0
        sampler.enter("index")
        t0 = time.perf_counter()
        store.ensure_fts_index()
        timings["index"] = time.perf_counter() - t0
        sampler.enter("done")
        rows = store.chunks().count_rows()
        db = work / "lancedb"
        disk = {p.name.removesuffix(".lance"): round(folder_mb(p), 1) for p in sorted(db.iterdir()) if p.is_dir()}
        disk["total"] = round(folder_mb(db), 1)
        cache = store.cache()
        cache_fragments = cache.stats()["fragment_stats"]["num_fragments"]
        cache_versions = len(cache.list_versions())
    finally:
        sampler.stop.set()
        tracemalloc.stop()
        shutil.rmtree(work, ignore_errors=True)
    after_prepare = sampler.ends["prepare"]
    vector_phase_peak = max(sampler.peaks.get(p, 0.0) for p in ("embed", "compact", "write"))
    all_vectors_mb = prepared * DIM * 4 / 2**20
    block_mb = EMBED_BLOCK * DIM * 4 / 2**20
    python_peak = max(sampler.python_peaks.get(p, 0.0) for p in ("embed", "compact", "write"))
    return {
        "chunks": prepared,
        "rows_written": rows,
        "tenants": len(batches),
        "workspace": info,
        "embedded": report.computed,
        "embed_block": EMBED_BLOCK,
        "write_batch": WRITE_BATCH,
        "seconds": {k: round(v, 1) for k, v in timings.items()},
        "embed_step_seconds": {"embedding": round(report.embed_s, 1), "cache": round(report.cache_s, 1)},
        "lancedb_disk_mb": disk,
        "cache_fragments_at_end": cache_fragments,
        "cache_versions_at_end": cache_versions,
        "malloc_arena_max": os.environ.get("MALLOC_ARENA_MAX"),
        "lance_cache_mb": os.environ.get("MEMORY_PIPELINE_LANCE_CACHE_MB"),
        "rss_mb": {
            "after_imports": round(sampler.ends["start"], 1),
            "after_prepare": round(after_prepare, 1),
            "peak_by_phase": {k: round(v, 1) for k, v in sampler.peaks.items()},
            "end_by_phase": {k: round(v, 1) for k, v in sampler.ends.items()},
            "peak": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        },
        "all_vectors_mb": round(all_vectors_mb, 1),
        "one_block_of_vectors_mb": round(block_mb, 1),
        "python_peak_mb_by_phase": {k: round(v, 1) for k, v in sampler.python_peaks.items()},
        "python_peak_while_embedding_and_writing_mb": round(python_peak, 1),
        "rise_while_embedding_and_writing_mb": round(vector_phase_peak - after_prepare, 1),
        "ratios": {
            "python_peak_over_all_vectors": round(python_peak / all_vectors_mb, 4),
            "python_peak_over_one_block": round(python_peak / block_mb, 2),
            "rss_rise_over_all_vectors": round((vector_phase_peak - after_prepare) / all_vectors_mb, 3),
        },
    }


def main() -> None:
    parser = command_line(__doc__, "memory")
    parser.add_argument("--chunks", type=int, default=1_000_000)
    parser.add_argument("--tenants", type=int, default=10)
    opts = parser.parse_args()
    result = run(opts.chunks, opts.tenants)
    print(memory_summary(result))
    write_report(opts.out, result)


if __name__ == "__main__":
    main()
