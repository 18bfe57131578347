"""Proves: a tenant's recall indices persisted beside the LanceDB folder give a new process (a
new cache) exactly the results the in-memory build gives, without reading the tenant's rows or
building an index (nor, while the table has not moved, reading its ids); a changed tenant is written under its new fingerprint, the old one removed and
its IVF centroids reused (no k-means); maintenance writes every large tenant ahead of a query;
a new cache serves a persisted tenant, and a small or empty one as read at the table's version, without
connecting to LanceDB, until a write moves the version; a tenant key never names a folder outside the
index (object storage: ``test_files_on_object_storage.py``); and forgetting a tenant
leaves none of its bytes among the persisted files while other tenants' stay.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import lancedb
import numpy as np
import pyarrow as pa
import pytest

from memory_pipeline.config import get_settings
from memory_pipeline.forget import forget_tenant
from memory_pipeline.l0.schedules import lancedb_optimize_job
from memory_pipeline.orchestration.resources import LanceDBResource
from memory_pipeline.recall import sources
from memory_pipeline.recall.index import files as index_files
from memory_pipeline.recall.index import kept_reads
from memory_pipeline.recall.index.ann import IvfIndex
from memory_pipeline.recall.index.bm25 import TextIndex
from memory_pipeline.recall.index.persist import persist_large_tenants
from memory_pipeline.recall.search import search
from memory_pipeline.recall.sources import ChunkSource, TenantCache
from memory_pipeline_tests.helpers import write
from memory_pipeline_tests.helpers.recall import build_workspace, ingest, recall_settings

ALICE = "support-bot~alice"
QUERIES = ("annual plans refundable", "API rate limit throttled", "contacted by email", "VPN certificate")


@pytest.fixture(scope="module")
def ingested(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("persisted")
    (base / "agents").mkdir()
    build_workspace(base / "agents")
    ingest(base / "agents", str(base / "lancedb"))
    return base


@pytest.fixture
def workspace(ingested, tmp_path):
    """A copy of the ingested workspace and database of the test's own (the tests change them)."""
    shutil.copytree(ingested, tmp_path / "copy")
    return tmp_path / "copy" / "agents", str(tmp_path / "copy" / "lancedb")


def _search_all(uri, settings, monkeypatch, persist_min_rows=1):
    """Every query through a fresh cache of its own: what a new process answers."""
    monkeypatch.setitem(sources._CACHES, uri, TenantCache(uri, persist_min_rows=persist_min_rows))
    return [[r.to_dict() for r in search(q, "support-bot", "alice", store=uri, settings=settings, min_score=0)]
            for q in QUERIES]


def _fail(*args, **kwargs):
    raise AssertionError("rebuilt although nothing changed")


def _folders(uri: str, tenant: str) -> list[Path]:
    return sorted(p for p in (index_files.index_root(uri) / "chunks" / tenant).iterdir())


def test_a_new_process_reads_the_persisted_indices_and_answers_the_same(workspace, monkeypatch):
    root, uri = workspace
    settings = recall_settings(root, uri, ann_min_rows=1, ann_nprobe=1000)  # the IVF path, exact
    in_memory = _search_all(uri, settings, monkeypatch, persist_min_rows=None)
    assert not (Path(uri) / index_files.INDEX_FOLDER).exists()
    first = _search_all(uri, settings, monkeypatch)  # reads LanceDB, builds, persists
    assert all(first) and first == in_memory
    [folder] = _folders(uri, ALICE)
    names = {p.name for p in folder.iterdir()}
    assert {"rows.arrow", "meta.json", "id_keys.npy", "ivf_grouped.npy", "bm25_vocab.arrow"} <= names
    assert "vectors.npy" not in names  # the IVF lists hold the only copy of the vectors

    for what, name in ((IvfIndex, "__init__"), (TextIndex, "__init__"), (ChunkSource, "to_rows")):
        monkeypatch.setattr(what, name, _fail)
    with monkeypatch.context() as patch:  # the table has not moved since: not even ids are read
        patch.setattr(sources, "rows_fingerprint", _fail)
        assert _search_all(uri, settings, monkeypatch) == in_memory
    write(root, "support-bot/users/bob/memory/tea.md", "# Tea\n\nBob drinks green tea.\n")
    ingest(root, uri)  # another tenant's write: alice's fingerprint is read again, nothing rebuilt
    assert _search_all(uri, settings, monkeypatch) == in_memory
    assert _folders(uri, ALICE) == [folder]


def test_a_changed_tenant_is_persisted_anew_reusing_its_centroids(workspace, monkeypatch):
    root, uri = workspace
    settings = recall_settings(root, uri, ann_min_rows=1, ann_nprobe=1000)
    # The nightly maintenance job writes every large tenant's indices ahead of the first query.
    monkeypatch.setenv("MEMORY_PIPELINE_RECALL", '{"ann_min_rows": 1}')
    get_settings.cache_clear()
    result = lancedb_optimize_job.execute_in_process(
        resources={"lancedb": LanceDBResource(uri=uri)},
        run_config={"ops": {"persist_recall_indexes": {"config": {"min_rows": 1}}}},
    )
    get_settings.cache_clear()
    assert result.success
    [before] = _folders(uri, ALICE)
    assert {"rows.arrow", "ivf_centroids.npy", "bm25_vocab.arrow"} <= {p.name for p in before.iterdir()}
    assert {p.name for p in (index_files.index_root(uri) / "chunks").iterdir()} >= {"support-bot~bob", "support-bot~_global"}
    with monkeypatch.context() as patch:  # current: nothing read from LanceDB or rebuilt
        for what, name in ((IvfIndex, "__init__"), (TextIndex, "__init__"), (ChunkSource, "to_rows")):
            patch.setattr(what, name, _fail)
        assert persist_large_tenants(uri, ann_min_rows=1, min_rows=1)[ALICE] > 0
    assert _folders(uri, ALICE) == [before]

    write(root, "support-bot/users/alice/memory/tea.md", "# Tea\n\nAlice drinks black coffee at nine.\n")
    ingest(root, uri)
    monkeypatch.setattr(IvfIndex, "_kmeans", _fail)  # the previous centroids are reused
    assert all(_search_all(uri, settings, monkeypatch))
    [now] = _folders(uri, ALICE)
    assert now.name != before.name and not before.exists()
    assert (now / "ivf_centroids.npy").exists()
    hits = search("black coffee", "support-bot", "alice", store=uri, settings=settings, min_score=0)
    assert hits and "black coffee" in hits[0].snippet


def test_without_lancedb_a_new_cache_serves_persisted_and_small_tenants_until_the_table_moves(workspace, monkeypatch):
    root, uri = workspace
    nobody, bob = "support-bot~nobody", "support-bot~bob"  # no memory yet, as an agent-wide scope often has
    first = TenantCache(uri, persist_min_rows=3)
    alice, small = first.rows(ChunkSource(), ALICE), first.rows(ChunkSource(), bob)
    assert len(alice) >= 3 and 0 < len(small) < 3 and len(first.rows(ChunkSource(), nobody)) == 0
    stamp = index_files.table_stamp(uri, "chunks", first.version("chunks"))
    kept = {t: list(index_files.tenant_files(uri, "chunks", t).tenant_dir.glob(f"{kept_reads.KEPT}.*.arrow"))
            for t in (nobody, bob, ALICE)}
    assert (len(kept[nobody]), len(kept[bob]), len(kept[ALICE])) == (1, 1, 0)

    fresh = TenantCache(uri, persist_min_rows=3)
    with monkeypatch.context() as patch:
        patch.setattr(TenantCache, "_read", _fail)
        served = [fresh.rows(ChunkSource(), t) for t in (ALICE, bob, nobody)]
        assert [list(r.ids) for r in served] == [list(alice.ids), list(small.ids), []]
        assert np.array_equal(served[1].vectors, small.vectors) and served[1].fingerprint == small.fingerprint
        assert fresh._db is None  # never connected: LanceDB was not needed
    assert fresh.table_names() == set(lancedb.connect(uri).list_tables().tables)
    assert index_files.table_stamp(uri, "chunks", fresh.version("chunks")) == stamp

    table = lancedb.connect(uri).open_table("chunks")
    row = table.search().where(f"tenant = '{ALICE}'").limit(1).to_arrow()
    row = row.set_column(row.schema.get_field_index("tenant"), "tenant", pa.array([nobody]))
    row = row.set_column(row.schema.get_field_index("id"), "id", pa.array(["nobody-1"]))
    table.add(row)  # the table moves: what was kept at the old version is read again
    assert list(TenantCache(uri, persist_min_rows=3).rows(ChunkSource(), nobody).ids) == ["nobody-1"]


def test_a_tenant_key_never_names_a_folder_outside_the_index():
    assert index_files.tenant_files("/data/lancedb", "chunks", "../escape") is None
    assert index_files.tenant_files("/data/lancedb", "../chunks", ALICE) is None


def test_forgetting_a_tenant_deletes_its_persisted_indices(workspace, monkeypatch):
    root, uri = workspace
    settings = recall_settings(root, uri, ann_min_rows=1)
    _search_all(uri, settings, monkeypatch)
    monkeypatch.setitem(sources._CACHES, uri, TenantCache(uri, persist_min_rows=1))
    search("codeword", "support-bot", "bob", store=uri, settings=settings, min_score=0)
    persisted = Path(uri) / index_files.INDEX_FOLDER
    assert _scan(persisted, b"contacted by email") and _scan(persisted, b"pineapple")

    report = forget_tenant("support-bot", "alice", root=root, lancedb_uri=uri)

    assert not (persisted / "chunks" / ALICE).exists()
    assert f"{index_files.INDEX_FOLDER}/chunks/{ALICE}" in report.files_deleted
    for word in (b"contacted by email", b"throttled", b"support-bot/users/alice", ALICE.encode()):
        assert _scan(persisted, word) == []
    assert _scan(persisted, b"pineapple")  # bob's stay: the scan sees persisted text


def _scan(folder: Path, needle: bytes) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.is_file() and needle in p.read_bytes()]
