"""Storing typed memories one at a time, as an agent does through MCP's ``memory_store`` or
``memory-pipeline memories store``: the time of each store, and of reading the tenant's memories
after them, on a local folder and on object storage (moto's S3 server on a loopback port).

Two stores of the same process take turns, one memory each, so the machine's drift falls on both:

- ``every_store``, the baseline: the full-text index of the memories table brought up to date
  after each store, which runs a LanceDB ``optimize`` (compaction, indices, and the pruning of
  versions older than a week, which lists every version kept) every time, as stores did before;
- ``when_fragmented``: what stores do now (``TypedMemoryStore.settle``): the memory and audit
  tables compacted only once one holds ``COMPACT_AT_FRAGMENTS`` fragments.

``first_10_ms`` and ``last_10_ms`` are the median stores at the start and the end, to show how
a store's time grows with the stores of the day before it; ``read_ms`` is the median of five reads
of the tenant's memories (``memory_rows``) after the last store, and ``fragments`` the memories
table's fragment count then. The embedding of each memory (MiniLM, the same in both) is included.

On object storage, each search also writes its events to the access log at once
(``activation/access_log.py``; a local folder spools them to a file). ``access_log`` times
``--searches`` such writes of five events each, the two ways taking turns: ``upsert`` (the
baseline, a ``merge_insert`` as before, the table left to the nightly optimize) and
``append_settle`` (now: appended, compacted at ``COMPACT_AT_FRAGMENTS``).

    python bench/memory_store.py [--stores 100] [--searches 150] [--backends local,s3]

moto keeps objects in its own memory and serves them over loopback: a real store's latency per
request is higher, which makes every listing and fragment cost more, not less.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench import command_line, host_steal_s, steal_since, work_offline, write_report  # noqa: E402
from bench.recall_object_store import BUCKET, start_moto  # noqa: E402

work_offline()

from memory_pipeline.activation.access_log import Access, access_rows, record_access  # noqa: E402
from memory_pipeline.embedding import make_embedder  # noqa: E402
from memory_pipeline.memories.operations import TypedMemories  # noqa: E402
from memory_pipeline.memories.store import MEMORIES, TypedMemoryStore  # noqa: E402
from memory_pipeline.store.base import COMPACT_AT_FRAGMENTS, LanceBase, fragment_count  # noqa: E402
from memory_pipeline.store.tables import ACCESS_LOG  # noqa: E402
from memory_pipeline.tenancy import Tenant  # noqa: E402

TENANT = Tenant("bench", "alice")


class EveryStore(TypedMemoryStore):
    """The baseline: the full-text index brought up to date (an optimize) after every store."""

    def settle(self, *specs) -> None:
        self.ensure_fts_index()


def _ms(seconds: list[float]) -> float:
    return round(statistics.median(seconds) * 1000, 1)


def measure(uri_of: dict[str, str], stores: int, embedder) -> dict:
    typed = {mode: TypedMemories(cls(uri_of[mode], embedder.dim), embedder)
             for mode, cls in (("every_store", EveryStore), ("when_fragmented", TypedMemoryStore))}
    times: dict[str, list[float]] = {mode: [] for mode in typed}
    for i in range(stores):
        for mode, ops in typed.items():
            started = time.perf_counter()
            ops.store_memory(TENANT, "fact", f"Loader {i} runs at {i % 24}:00 on host h{i} (ticket OPS-{1000 + i})")
            times[mode].append(time.perf_counter() - started)
    out = {}
    for mode, ops in typed.items():
        reads = []
        for _ in range(5):
            started = time.perf_counter()
            rows = ops.store.memory_rows(TENANT.key)
            reads.append(time.perf_counter() - started)
        assert rows.height == stores, f"{mode}: {rows.height} memories read back, {stores} stored"
        table = ops.store.db.open_table(MEMORIES.name)
        out[mode] = {"store_ms": _ms(times[mode]), "first_10_ms": _ms(times[mode][:10]),
                     "last_10_ms": _ms(times[mode][-10:]), "read_ms": _ms(reads),
                     "fragments": fragment_count(table)}
    base, new = out["every_store"], out["when_fragmented"]
    out["ratios"] = {key: round(new[key] / base[key], 3) for key in ("store_ms", "last_10_ms", "read_ms")}
    return out


def measure_access_log(root: str, searches: int) -> dict:
    times: dict[str, list[float]] = {"upsert": [], "append_settle": []}
    for i in range(searches):
        returned = [Access(TENANT.key, f"bench/users/alice/memory/2026-11-{i % 28 + 1:02d}.md#L{j}", (f"r{i}-{j}",))
                    for j in range(5)]
        started = time.perf_counter()
        LanceBase(f"{root}/upsert").upsert(ACCESS_LOG, access_rows("search", returned))
        times["upsert"].append(time.perf_counter() - started)
        started = time.perf_counter()
        record_access(f"{root}/append_settle", "search", returned=returned)
        times["append_settle"].append(time.perf_counter() - started)
    out = {mode: {"write_ms": _ms(t), "first_10_ms": _ms(t[:10]), "last_10_ms": _ms(t[-10:])} for mode, t in times.items()}
    for mode in times:
        table = LanceBase(f"{root}/{mode}").db.open_table(ACCESS_LOG.name)
        assert table.count_rows() == 5 * searches, f"{mode}: {table.count_rows()} events, {5 * searches} written"
        out[mode]["fragments"] = fragment_count(table)
    out["ratios"] = {key: round(out["append_settle"][key] / out["upsert"][key], 3) for key in ("write_ms", "last_10_ms")}
    return out


def main() -> None:
    ap = command_line(__doc__, "memory_store")
    ap.add_argument("--stores", type=int, default=100)
    ap.add_argument("--searches", type=int, default=150)
    ap.add_argument("--backends", default="local,s3")
    args = ap.parse_args()
    embedder = make_embedder("minilm")
    embedder.embed(["load the model before anything is timed"])
    work = Path(tempfile.mkdtemp(prefix="memory-store-bench-"))
    report = {"stores": args.stores, "searches": args.searches, "compact_at_fragments": COMPACT_AT_FRAGMENTS, "backends": {}}
    moto = None
    try:
        for backend in args.backends.split(","):
            if backend == "s3":
                moto, url = start_moto(work)
                os.environ.update({"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
                                   "AWS_REGION": "us-east-1", "AWS_ENDPOINT": url, "AWS_ALLOW_HTTP": "true"})
                uri_of = {mode: f"s3://{BUCKET}/{mode}" for mode in ("every_store", "when_fragmented")}
            else:
                uri_of = {mode: str(work / mode) for mode in ("every_store", "when_fragmented")}
            load, steal = os.getloadavg(), host_steal_s()
            entry = measure(uri_of, args.stores, embedder)
            entry.update(load_average_at_start=[round(x, 2) for x in load],
                         load_average_at_end=[round(x, 2) for x in os.getloadavg()], host_steal_s=steal_since(steal))
            report["backends"][backend] = entry
            for mode in ("every_store", "when_fragmented"):
                e = entry[mode]
                print(f"{backend:5s} {mode:15s} store {e['store_ms']:7.1f} ms (first 10 {e['first_10_ms']:7.1f}, "
                      f"last 10 {e['last_10_ms']:7.1f}), read {e['read_ms']:6.1f} ms, {e['fragments']} fragments",
                      flush=True)
            print(f"{backend:5s} ratios (when_fragmented / every_store): {entry['ratios']}", flush=True)
            if backend == "s3":
                entry["access_log"] = log = measure_access_log(f"s3://{BUCKET}/access", args.searches)
                for mode in ("upsert", "append_settle"):
                    e = log[mode]
                    print(f"s3    access log {mode:13s} write {e['write_ms']:7.1f} ms (first 10 {e['first_10_ms']:7.1f}, "
                          f"last 10 {e['last_10_ms']:7.1f}), {e['fragments']} fragments", flush=True)
                print(f"s3    access log ratios (append_settle / upsert): {log['ratios']}", flush=True)
    finally:
        if moto is not None:
            moto.terminate()
        shutil.rmtree(work, ignore_errors=True)
    write_report(args.out, report)


if __name__ == "__main__":
    main()
