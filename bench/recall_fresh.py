"""Baselines of ``bench/recall.py`` that need more than one process or model path.

- ``new_process_first_search``: the first search of a tenant in a fresh process (this file run
  as a script with a JSON spec), from the persisted indices or with persistence off (the
  baseline: read the rows from LanceDB and build every index), with the memory it adds and the
  result ids of every query, to compare with the process that built the indices;
- ``other_tenant_write``: a row written for another tenant, which moves the table's version (the
  persisted tenant's ids are then read again to check it is unchanged);
- ``changed_tenant_first_search``: the same after 1% new rows and 0.2% deleted ones, updating the
  persisted indices from the changed rows (``recall/index/update.py``) against rebuilding
  everything;
- ``TorchScriptEmbedder`` and ``EncodeEmbedder``: the query paths ONNX Runtime is measured against.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.compute as pc

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from memory_pipeline.config import Settings  # noqa: E402
from memory_pipeline.embedding import MiniLMEmbedder  # noqa: E402
from memory_pipeline.l0.store import ChunkIndex  # noqa: E402
from memory_pipeline.recall import sources  # noqa: E402
from memory_pipeline.recall.search import search  # noqa: E402
from memory_pipeline.recall.sources import TenantCache, tenant_cache  # noqa: E402
from memory_pipeline.store.tables import CHUNKS  # noqa: E402


class TorchScriptEmbedder(MiniLMEmbedder):
    """The query path before ONNX Runtime: the transformer traced with TorchScript."""

    def _onnx(self):
        return None


class EncodeEmbedder(MiniLMEmbedder):
    """The query through ``SentenceTransformer.encode``, the slowest path."""

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


def result_ids(results) -> list[list[str]]:
    return [[i for r in hits for i in r.ids] for hits in results]


def usage_mb() -> tuple[float, float]:
    """(RSS, USS) of this process in MB: USS leaves out shared and page-cache pages."""
    import psutil

    info = psutil.Process().memory_full_info()
    return info.rss / 2**20, info.uss / 2**20


def cold_child(spec: dict) -> dict:
    """The first searches of a tenant in this fresh process."""
    from bench.recall import AGENT, PrecomputedEmbedder

    if not spec["persisted"]:  # the baseline: read the rows and build every index, persist nothing
        sources._CACHES[spec["uri"]] = TenantCache(spec["uri"], persist_min_rows=None)
    settings = Settings(**spec["settings"])
    qvecs = np.load(spec["qvecs"])
    fixed = PrecomputedEmbedder(dict(zip(spec["queries"], qvecs)))
    from memory_pipeline.recall.index import update as index_update

    updates: list[bool] = []  # whether the first search updated persisted indices (a changed tenant)
    real_update = index_update.updated_rows

    def recording_update(*args, **kwargs):
        rows = real_update(*args, **kwargs)
        updates.append(rows is not None)
        return rows

    index_update.updated_rows = recording_update
    tenant_cache(spec["uri"]).table_names()  # connect first: a process is up before its first query
    rss0, uss0 = usage_mb()
    t0 = time.perf_counter()
    first = search(spec["queries"][0], AGENT, spec["user"], store=spec["uri"], embedder=fixed, settings=settings, min_score=0)
    seconds = time.perf_counter() - t0
    rss1, uss1 = usage_mb()
    rest = [search(q, AGENT, spec["user"], store=spec["uri"], embedder=fixed, settings=settings, min_score=0)
            for q in spec["queries"][1:]]
    return {"first_search_s": round(seconds, 3), "rss_added_mb": round(rss1 - rss0, 1),
            "uss_added_mb": round(uss1 - uss0, 1), "updated_from_changed_rows": any(updates),
            "ids": result_ids([first, *rest])}


def new_process_first_search(size: int, uri: str, settings: Settings, queries, qvecs, persisted: bool, workdir: str) -> dict:
    qpath = Path(workdir) / f"qvecs-{size}.npy"
    np.save(qpath, qvecs)
    spec = {"uri": uri, "user": f"t{size}", "persisted": persisted, "queries": list(queries), "qvecs": str(qpath),
            "settings": json.loads(settings.model_dump_json())}
    out = subprocess.run([sys.executable, __file__, json.dumps(spec)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def append_rows(uri: str, user: str, count: int, seed: int, vocab: list[str], mixture, tag: str = "new") -> None:
    """``count`` new rows for the tenant, in new files (a changed tenant)."""
    from bench.recall import DIM, tenant_slices

    table = ChunkIndex(uri, dim=DIM).db.open_table(CHUNKS.name)
    for part in tenant_slices(user, count, seed, vocab, mixture):
        ids = pc.binary_join_element_wise(part.column("id"), tag, "-")
        part = part.set_column(part.schema.get_field_index("id"), "id", ids)
        part = part.set_column(part.schema.get_field_index("text_hash"), "text_hash", ids)
        paths = pc.replace_substring_regex(part.column("path"), r"(\.jsonl|\.md)$", rf"-{tag}\1")
        table.add(part.set_column(part.schema.get_field_index("path"), "path", paths))


def other_tenant_write(uri: str, vocab: list[str], mixture) -> None:
    append_rows(uri, "other", 1, 5, vocab, mixture, tag=f"w{time.time_ns()}")


def delete_files(uri: str, user: str, count: int) -> int:
    """Delete about ``count`` of the tenant's rows, whole note files; the rows deleted."""
    from bench.recall import AGENT, DIM

    table = ChunkIndex(uri, dim=DIM).db.open_table(CHUNKS.name)
    tenant = f"{AGENT}~{user}"
    before = table.count_rows(f"tenant = '{tenant}'")
    paths = [f"'{AGENT}/users/{user}/memory/note{f:06d}.md'" for f in range(0, max(1, count // 20) * 7, 7)]
    table.delete(f"tenant = '{tenant}' AND path IN ({', '.join(paths)})")
    return before - table.count_rows(f"tenant = '{tenant}'")


def changed_tenant_first_search(size, uri, settings, queries, qvecs, workdir, vocab, mixture) -> dict:
    """A new process's first search after 1% new rows and 0.2% deleted ones: updated from the
    changed rows (persisted indices) against rebuilding everything (persistence off), and how
    often both agree (not always: the rebuild trains new IVF centroids, the update keeps them)."""
    added = max(1, size // 100)
    deleted = delete_files(uri, f"t{size}", max(20, size // 500))
    append_rows(uri, f"t{size}", added, size + 99, vocab, mixture)
    incremental = new_process_first_search(size, uri, settings, queries, qvecs, True, workdir)
    rebuilt = new_process_first_search(size, uri, settings, queries, qvecs, False, workdir)
    same = float(np.mean([a == b for a, b in zip(incremental.pop("ids"), rebuilt.pop("ids"))]))
    return {"rows_added": added, "rows_deleted": deleted, "incremental": incremental, "rebuilt": rebuilt,
            "queries_with_same_results": round(same, 3)}


if __name__ == "__main__":
    print(json.dumps(cold_child(json.loads(sys.argv[1]))))
