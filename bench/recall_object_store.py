"""The cold first search of a large tenant in a new process, with LanceDB on object storage.

An S3 API on a loopback port (moto's server, the one the tests use) holds the tables; one tenant
of ``--size`` chunks (the synthetic tenant of ``bench/recall.py``: clustered vectors, IVF path)
is written to it, then the first search is timed in fresh processes (``recall_fresh.cold_child``),
each on a machine of its own or not (``MEMORY_PIPELINE_CACHE_DIR``):

- ``rebuilt``: persistence off, the baseline: the tenant's rows read from the store and every
  index built in memory, as every process did on object storage before;
- ``first_machine``: the first process anywhere: the same, plus its indices uploaded beside the tables;
- ``new_machine``: a process on another machine (an empty cache): the indices fetched from the store;
- ``new_process``: another process on that machine: its cached copy, memory-mapped.

``wall_s`` is the whole process (interpreter start, imports, the search), ``first_search_s`` the
search alone. The figures go into ``bench/results/recall.json`` under ``object_storage``, beside
the local figures ``bench/recall.py`` writes there (which are kept).

    python bench/recall_object_store.py [--size 100000] [--queries 20]

moto keeps objects in its own memory and serves them over loopback: a real store's latency and
bandwidth differ (the fetch is a few large GETs, the version check one listing and one small GET).
"""

from __future__ import annotations

import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import numpy as np  # noqa: E402

from bench import command_line  # noqa: E402
from bench.recall import DIM, Mixture, tenant_slices, texts, vocabulary  # noqa: E402
from memory_pipeline.config import Settings  # noqa: E402
from memory_pipeline.l0.store import ChunkIndex  # noqa: E402

BUCKET = "bench"


def start_moto(logs: Path) -> tuple[subprocess.Popen, str]:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = Path(sys.executable).with_name("moto_server")
    proc = subprocess.Popen([str(server), "-H", "127.0.0.1", "-p", str(port)], stdout=open(logs / "moto.log", "wb"),
                            stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    for _ in range(150):
        try:
            urllib.request.urlopen(urllib.request.Request(f"{url}/{BUCKET}", method="PUT"), timeout=2)
            return proc, url
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"moto_server did not start: {(logs / 'moto.log').read_text()[-2000:]}")


def cold(spec: dict, cache: Path) -> dict:
    """``recall_fresh.cold_child`` in a new process whose cache folder is ``cache``."""
    env = {**os.environ, "MEMORY_PIPELINE_CACHE_DIR": str(cache)}
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, str(HERE / "recall_fresh.py"), json.dumps(spec)], capture_output=True,
                         text=True, env=env)
    wall = time.perf_counter() - t0
    if out.returncode:
        raise SystemExit(out.stderr[-3000:])
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["wall_s"] = round(wall, 3)
    return result


def main() -> None:
    ap = command_line(__doc__, "recall")
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=20)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="recall-s3-bench-"))
    proc, url = start_moto(work)
    os.environ.update({"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_REGION": "us-east-1",
                       "AWS_ENDPOINT": url, "AWS_ALLOW_HTTP": "true"})
    try:
        load_start = os.getloadavg()
        uri = f"s3://{BUCKET}/lancedb"
        vocab = vocabulary(random.Random(7))
        mixture = Mixture(args.size, args.size)
        store = ChunkIndex(uri, dim=DIM)
        table = store.chunks()
        t0 = time.perf_counter()
        for part in tenant_slices(f"t{args.size}", args.size, args.size, vocab, mixture):
            table.add(part)
        write_s = time.perf_counter() - t0
        store.ensure_fts_index()
        print(f"wrote {args.size:,} rows to the S3 API in {write_s:.1f} s", flush=True)

        settings = Settings(root=str(work), lancedb_uri=uri, embedder="minilm")
        qrng = np.random.default_rng(11)
        queries = [" ".join(texts(qrng, vocab, 1)[0].split()[:4]) + f" q{i}" for i in range(args.queries)]
        qvecs = mixture.draw(len(queries), np.random.default_rng(10_000 + args.size))
        np.save(work / "qvecs.npy", qvecs)
        spec = {"uri": uri, "user": f"t{args.size}", "queries": queries, "qvecs": str(work / "qvecs.npy"),
                "settings": json.loads(settings.model_dump_json())}
        runs = {
            "rebuilt": cold({**spec, "persisted": False}, work / "cache-none"),
            "first_machine": cold({**spec, "persisted": True}, work / "cache-a"),
            "new_machine": cold({**spec, "persisted": True}, work / "cache-b"),
            "new_process": cold({**spec, "persisted": True}, work / "cache-b"),
        }
        ids = {name: run.pop("ids") for name, run in runs.items()}
        for name, run in runs.items():
            print(f"{name:14s} first search {run['first_search_s']:7.3f} s, process {run['wall_s']:7.3f} s, "
                  f"+{run['rss_added_mb']} MB RSS", flush=True)
        entry = {
            "size": args.size, "queries": args.queries, "store": "moto_server on a loopback port",
            "load_average_at_start": load_start, "load_average_at_end": os.getloadavg(),
            "write_s": round(write_s, 2), **runs,
            "results_identical": {name: ids[name] == ids["rebuilt"] for name in runs if name != "rebuilt"},
            "peak_rss_mb_parent": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        }
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)  # the machines' caches: 200 MB each at 100k chunks
    out = Path(args.out)
    report = json.loads(out.read_text()) if out.exists() else {}
    report.setdefault("object_storage", {})[str(args.size)] = entry
    out.write_text(json.dumps(report, indent=2))
    print(f"wrote {out} (object_storage.{args.size})")


if __name__ == "__main__":
    main()
