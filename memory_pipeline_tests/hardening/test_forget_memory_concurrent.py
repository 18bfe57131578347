"""Forgetting one typed memory keeps a write that lands meanwhile and leaves no byte of what it
forgot, on a local folder and on object storage (moto's S3; skipped, saying why, without it).

``TypedMemoryStore.purge_deleted`` used to read the memory and audit tables and overwrite them from that
snapshot: a memory stored or updated by another process between the read and the overwrite was
silently lost on object storage, where no commit lock keeps other writers out. It now purges as
``forget_tenant`` does (``store.purge.purge_table``: every live row updated in place, indices
rebuilt, old versions dropped, commits retried on conflict). The concurrent writer here is a
second connection that stores one memory and updates another just as the purge starts, after
the forgotten memory's delete.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from memory_pipeline.embedding import HashEmbedder
from memory_pipeline.memories import store as graph_store
from memory_pipeline.memories.operations import TypedMemories
from memory_pipeline.tenancy import Tenant
from memory_pipeline_tests.helpers.hardening import ALICE_WORD, BUCKET, objects_containing, with_concurrent_writer

ALICE = Tenant("support-bot", "alice")
FORGOTTEN = "quokkazebra"  # only in the memory that is forgotten (and a reason about it)
KEPT = ALICE_WORD  # only in what stays: the concurrent writer's word


def _memories(lance_uri: str) -> tuple[TypedMemories, dict]:
    typed = TypedMemories.open(lance_uri, HashEmbedder())
    for i in range(20):  # enough rows that a lone delete would not make LanceDB rewrite a file
        typed.store_memory(ALICE, "fact", f"Filler fact number {i} about the nightly loader")
    stored = {
        "secret": typed.store_memory(ALICE, "fact", f"Alice's locker code is {FORGOTTEN}-5521",
                                     reasoning=f"she spelled {FORGOTTEN} twice"),
        "kept": typed.store_memory(ALICE, "preference", "Prefers invoices as PDF attachments"),
    }
    return typed, stored


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[str, dict]:
    """The memories of ``_memories`` in a local folder, stored once for the local tests."""
    lance_uri = str(tmp_path_factory.mktemp("built") / "lancedb")
    return lance_uri, _memories(lance_uri)[1]


@pytest.fixture
def local_memories(built, tmp_path) -> tuple[str, TypedMemories, dict]:
    """A copy of ``built`` for one test: (LanceDB folder, graph on it, stored memories)."""
    lance_uri = str(tmp_path / "lancedb")
    shutil.copytree(built[0], lance_uri)
    return lance_uri, TypedMemories.open(lance_uri, HashEmbedder()), built[1]


def _check(lance_uri: str, stored: dict, done: dict) -> None:
    typed = TypedMemories.open(lance_uri, HashEmbedder())
    assert done, "the purge never ran"
    assert typed.store.get_memory(ALICE.key, stored["secret"]["id"]) is None
    assert typed.store.get_memory(ALICE.key, done["new"]["id"])["content"] == f"Alice bought a {KEPT} in November"
    assert typed.store.get_memory(ALICE.key, stored["kept"]["id"])["content"] == "Prefers invoices as a portal link"
    assert typed.store.memory_rows(ALICE.key).height == 22
    audit = typed.store.audit_rows(ALICE.key).to_dicts()
    assert [(a["memory_id"], a["op"]) for a in audit if a["memory_id"] in (done["new"]["id"], stored["kept"]["id"])] == [
        (stored["kept"]["id"], "store"), (done["new"]["id"], "store"), (stored["kept"]["id"], "update"),
    ]
    assert [(a["op"], a["reason"]) for a in audit if a["memory_id"] == stored["secret"]["id"]] == [
        ("store", None), ("forget", "asked to"),
    ]
    # The rebuilt full-text index covers the concurrent write and not the forgotten memory.
    table = typed.store.memories()
    assert [r["id"] for r in table.search(KEPT, query_type="fts").limit(5).to_list()] == [done["new"]["id"]]
    assert table.search(FORGOTTEN, query_type="fts").limit(5).to_list() == []


def _local_files_containing(folder: str, word: str) -> list[str]:
    needle = word.lower().encode()
    return sorted(str(p) for p in Path(folder).rglob("*") if p.is_file() and needle in p.read_bytes().lower())


def test_forgetting_a_memory_keeps_a_concurrent_write_on_a_local_folder(local_memories, monkeypatch):
    """forget_memory holds the commit lock, re-entrant on its own thread, so the writer goes through."""
    lance_uri, typed, stored = local_memories
    assert _local_files_containing(lance_uri, FORGOTTEN)
    done = with_concurrent_writer(monkeypatch, graph_store, "purge_table", lance_uri, stored["kept"]["id"])

    typed.forget_memory(ALICE, stored["secret"]["id"], reason="asked to", actor="test")

    _check(lance_uri, stored, done)
    assert _local_files_containing(lance_uri, FORGOTTEN) == []  # data files, old versions, indices
    assert _local_files_containing(lance_uri, KEPT)  # while the same scan sees what stays


def test_forgetting_a_memory_on_object_storage_keeps_a_concurrent_write(s3, monkeypatch):
    lance_uri = f"s3://{BUCKET}/db"
    typed, stored = _memories(lance_uri)
    assert objects_containing(s3, FORGOTTEN)
    done = with_concurrent_writer(monkeypatch, graph_store, "purge_table", lance_uri, stored["kept"]["id"])

    typed.forget_memory(ALICE, stored["secret"]["id"], reason="asked to", actor="test")

    _check(lance_uri, stored, done)
    assert objects_containing(s3, FORGOTTEN) == []
    assert objects_containing(s3, KEPT)


def test_purge_keeps_every_row_and_the_index_when_nothing_was_deleted(local_memories):
    """A purge with nothing to remove changes no row, and full-text search still answers."""
    _, typed, stored = local_memories
    before = typed.store.memory_rows(ALICE.key).sort("id").to_dicts()
    typed.store.purge_deleted()
    assert typed.store.memory_rows(ALICE.key).sort("id").to_dicts() == before
    hits = typed.store.memories().search("invoices", query_type="fts").limit(5).to_list()
    assert [h["id"] for h in hits] == [stored["kept"]["id"]]
    assert len(typed.store.memories().list_versions()) == 1  # older versions dropped
