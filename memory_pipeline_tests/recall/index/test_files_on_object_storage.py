"""Proves: with LanceDB on object storage (moto's S3 API on a loopback port), recall's persisted
indices are written beside the tables; a new process on another machine (an empty cache folder)
answers exactly as the in-memory build does, fetching them instead of reading the tenant's rows or
building an index, without connecting to LanceDB while the table has not moved; a changed tenant
replaces its folder on the store; forgetting a tenant removes its folders from the store and from
this machine's cache, another machine drops its copy at its next read of the tenant, and other
tenants' stay. Object storage is where a deployment of several workers keeps its tables, and
without these files every worker rebuilt a large tenant on its first query."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pyarrow import fs

from memory_pipeline.forget import forget_tenant
from memory_pipeline.recall import sources
from memory_pipeline.recall.index import files as index_files
from memory_pipeline.recall.index.ann import IvfIndex
from memory_pipeline.recall.index.bm25 import TextIndex
from memory_pipeline.recall.search import search
from memory_pipeline.recall.sources import ChunkSource, TenantCache
from memory_pipeline.store import object_store
from memory_pipeline_tests.helpers import write
from memory_pipeline_tests.helpers.object_store import BUCKET
from memory_pipeline_tests.helpers.recall import build_workspace, ingest, recall_settings

ALICE, BOB = "support-bot~alice", "support-bot~bob"
QUERIES = ("annual plans refundable", "API rate limit throttled", "contacted by email", "VPN certificate")


@pytest.fixture
def on_s3(s3, tmp_path):
    root = tmp_path / "agents"
    root.mkdir()
    build_workspace(root)
    uri = f"s3://{BUCKET}/db"
    ingest(root, uri)
    return root, uri


def _machine(monkeypatch, tmp_path: Path, name: str) -> Path:
    """From now on the process runs on machine ``name``: its own cache folder."""
    monkeypatch.setenv("MEMORY_PIPELINE_CACHE_DIR", str(tmp_path / name))
    return tmp_path / name


def _search_all(uri, settings, monkeypatch, persist_min_rows=1):
    """Every query through a fresh cache of its own: what a new process answers."""
    monkeypatch.setitem(sources._CACHES, uri, TenantCache(uri, persist_min_rows=persist_min_rows))
    return [[r.to_dict() for r in search(q, "support-bot", "alice", store=uri, settings=settings, min_score=0)]
            for q in QUERIES]


def _stored(uri: str, tenant: str) -> dict[str, set[str]]:
    """{fingerprint: file names} of the tenant's folders on the store."""
    store, base = object_store.filesystem(uri)
    tenant_dir = f"{base}/{index_files.INDEX_FOLDER}/chunks/{tenant}"
    return {name: {i.base_name for i in object_store.listing(store, f"{tenant_dir}/{name}")}
            for name in object_store.folders(store, tenant_dir)}


def _fail(*args, **kwargs):
    raise AssertionError("read or rebuilt although the store holds the tenant's indices")


def test_a_new_machine_answers_from_the_indices_beside_the_tables(on_s3, monkeypatch, tmp_path):
    root, uri = on_s3
    settings = recall_settings(root, uri, ann_min_rows=1, ann_nprobe=1000)  # the IVF path, exact
    _machine(monkeypatch, tmp_path, "first")
    in_memory = _search_all(uri, settings, monkeypatch, persist_min_rows=None)
    assert _stored(uri, ALICE) == {}
    assert _search_all(uri, settings, monkeypatch) == in_memory  # reads LanceDB, builds, uploads
    [(fingerprint, names)] = _stored(uri, ALICE).items()
    assert {"meta.json", "rows.arrow", "id_keys.npy", "ivf_grouped.npy", "bm25_vocab.arrow", "checked.json"} <= names

    cache = _machine(monkeypatch, tmp_path, "second")
    with monkeypatch.context() as patch:
        for what, name in ((IvfIndex, "__init__"), (TextIndex, "__init__"), (ChunkSource, "to_rows"),
                           (TenantCache, "_read"), (sources, "rows_fingerprint")):
            patch.setattr(what, name, _fail)
        fresh = TenantCache(uri, persist_min_rows=1)
        rows = fresh.rows(ChunkSource(), ALICE)
        assert fresh._db is None  # never connected: the store's listing said the table has not moved
        assert _search_all(uri, settings, monkeypatch) == in_memory
    assert (cache / "recall_index").is_dir() and rows.fingerprint == fingerprint
    first = TenantCache(uri, persist_min_rows=None).rows(ChunkSource(), ALICE)
    assert list(rows.ids) == list(first.ids) and np.array_equal(np.asarray(rows.vectors)[np.argsort(rows.ids)],
                                                                 np.asarray(first.vectors)[np.argsort(first.ids)])

    write(root, "support-bot/users/alice/memory/tea.md", "# Tea\n\nAlice drinks black coffee at nine.\n")
    ingest(root, uri)
    assert all(_search_all(uri, settings, monkeypatch))
    [(now, _)] = _stored(uri, ALICE).items()
    assert now != fingerprint  # the changed tenant's folder replaced the old one on the store
    hits = search("black coffee", "support-bot", "alice", store=uri, settings=settings, min_score=0)
    assert hits and "black coffee" in hits[0].snippet


def test_forgetting_a_tenant_removes_its_indices_from_the_store_and_every_cache(on_s3, monkeypatch, tmp_path):
    root, uri = on_s3
    settings = recall_settings(root, uri, ann_min_rows=1)
    other = _machine(monkeypatch, tmp_path, "other")
    _search_all(uri, settings, monkeypatch)
    monkeypatch.setitem(sources._CACHES, uri, TenantCache(uri, persist_min_rows=1))
    search("codeword", "support-bot", "bob", store=uri, settings=settings, min_score=0)
    here = _machine(monkeypatch, tmp_path, "here")
    _search_all(uri, settings, monkeypatch)
    assert _stored(uri, ALICE) and _stored(uri, BOB)
    assert _scan(other, b"contacted by email") and _scan(here, b"contacted by email")

    report = forget_tenant("support-bot", "alice", root=root, lancedb_uri=uri)

    assert f"{uri}/{index_files.INDEX_FOLDER}/chunks/{ALICE}" in report.files_deleted
    assert _stored(uri, ALICE) == {} and _stored(uri, BOB)
    assert _stored_bytes(uri, b"contacted by email") == [] and _scan(here, b"contacted by email") == []
    assert _scan(other, b"contacted by email")  # the other machine's copy, until it reads alice again
    _machine(monkeypatch, tmp_path, "other")
    assert len(TenantCache(uri, persist_min_rows=1).rows(ChunkSource(), ALICE)) == 0
    assert _scan(other, b"contacted by email") == [] and _scan(other, b"pineapple")  # bob's stay


def _scan(folder: Path, needle: bytes) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.is_file() and needle in p.read_bytes()]


def _stored_bytes(uri: str, needle: bytes) -> list[str]:
    """Keys of the persisted indices on the store whose bytes hold ``needle``."""
    store, base = object_store.filesystem(uri)
    infos = store.get_file_info(fs.FileSelector(f"{base}/{index_files.INDEX_FOLDER}", recursive=True))
    return [i.path for i in infos if i.type == fs.FileType.File and needle in object_store.read_bytes(store, i.path)]
