"""``forget_tenant`` on object storage, where no commit lock keeps other writers out: a write that
commits while forget runs is kept, the forgotten user's rows and bytes still go, and a commit
conflict is retried like the store's own writes.

The S3 tests run against moto's S3 server on a loopback port (the ``moto_server`` command; they
skip, saying why, where it is not installed). A concurrent writer is a second connection that
stores and updates typed memories in the middle of forget's work, between its delete and its
in-place rewrite of a table: an overwrite from a snapshot would lose exactly those writes.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import lancedb
import pyarrow.compute as pc

from memory_pipeline import forget
from memory_pipeline.embedding import HashEmbedder
from memory_pipeline.forget import forget_tenant
from memory_pipeline.l0.assets import l0_assets, l0_index_job
from memory_pipeline.memories.operations import TypedMemories
from memory_pipeline.orchestration.resources import LanceDBResource
from memory_pipeline.orchestration.runs import discover_tenants, run_partitioned_job
from memory_pipeline.recall.search import search
from memory_pipeline.tenancy import Tenant
from memory_pipeline_tests.helpers import make_resources
from memory_pipeline_tests.helpers.hardening import ALICE_WORD, BUCKET, objects_containing, with_concurrent_writer
from memory_pipeline_tests.helpers.recall import build_workspace, recall_settings

ALICE, BOB = Tenant("support-bot", "alice"), Tenant("support-bot", "bob")
BOB_WORD = "xylophonist"  # said by Bob only


def tenants_in(uri: str) -> dict[str, set[str]]:
    db = lancedb.connect(uri)
    out = {}
    for name in db.list_tables().tables:
        table = db.open_table(name)
        if "tenant" in table.schema.names:
            out[name] = set(pc.unique(table.search().select(["tenant"]).limit(None).to_arrow().column("tenant")).to_pylist())
    return out


def workspace(tmp_path: Path, lance_uri: str) -> tuple[Path, TypedMemories, dict]:
    """The recall test workspace indexed into ``lance_uri``, plus typed memories of Alice and Bob."""
    root = tmp_path / "agents"
    build_workspace(root)
    (root / "support-bot/users/bob/memory").mkdir(parents=True)
    (root / "support-bot/users/bob/memory/hobby.md").write_text(f"# Hobby\n\nBob is a {BOB_WORD} in a jazz band.\n")
    (root / "support-bot/users/alice/memory/hobby.md").write_text(f"# Hobby\n\nAlice plays the {ALICE_WORD}.\n")
    # The IO manager's hand-offs stay in the temporary folder whatever the database URI is.
    resources = {**make_resources(root, str(tmp_path / "unused")), "lancedb": LanceDBResource(uri=lance_uri)}
    defs = dg.Definitions(assets=l0_assets, jobs=[l0_index_job], resources=resources)
    run_partitioned_job(defs, "l0_index_job", dg.DagsterInstance.ephemeral(), discover_tenants(root))
    typed = TypedMemories.open(lance_uri, HashEmbedder())
    stored = {
        "bob": typed.store_memory(BOB, "fact", f"Bob plays in a band as a {BOB_WORD}"),
        "alice": typed.store_memory(ALICE, "preference", "Prefers invoices as PDF attachments"),
    }
    return root, typed, stored


def check_forgotten(root: Path, lance_uri: str, stored: dict, done: dict) -> None:
    held = tenants_in(lance_uri)
    assert all(BOB.key not in tenants for name, tenants in held.items() if name != "memory_audit"), held
    typed = TypedMemories.open(lance_uri, HashEmbedder())
    # The concurrent writes are all there: the new memory, the updated text, their audit rows.
    assert typed.store.get_memory(ALICE.key, done["new"]["id"])["content"] == f"Alice bought a {ALICE_WORD} in November"
    assert typed.store.get_memory(ALICE.key, stored["alice"]["id"])["content"] == "Prefers invoices as a portal link"
    assert [a["op"] for a in typed.store.audit_rows(ALICE.key).to_dicts()] == ["store", "store", "update"]
    assert [(a["op"], a["memory_id"]) for a in typed.store.audit_rows(BOB.key).to_dicts()] == [("forget", "*")]
    # Recall serves them, full text included; Bob's memory is gone from it.
    settings = recall_settings(root, lance_uri)
    hits = search(f"{ALICE_WORD} bought", "support-bot", "alice", store=lance_uri, embedder=HashEmbedder(),
                  settings=settings, sources=["facts"], min_score=0)
    assert hits[0].ids == [done["new"]["id"]] and hits[0].parts["text"] > 0
    left = search(BOB_WORD, "support-bot", "bob", store=lance_uri, embedder=HashEmbedder(),
                  settings=settings, sources=["facts", "memory"], min_score=0, k=20)
    assert not [h for h in left if h.tenant == BOB.key or BOB_WORD in h.snippet]


def test_forget_on_object_storage_keeps_a_concurrent_write_and_no_byte_of_the_user(s3, tmp_path, monkeypatch):
    lance_uri = f"s3://{BUCKET}/db"
    root, _, stored = workspace(tmp_path, lance_uri)
    assert objects_containing(s3, BOB_WORD) and objects_containing(s3, ALICE_WORD)
    done = with_concurrent_writer(monkeypatch, forget, "_purge", lance_uri, stored["alice"]["id"])

    report = forget_tenant("support-bot", "bob", root=root, lancedb_uri=lance_uri)

    assert done and report.rows_deleted["memories"] == 1 and report.rows_deleted["chunks"] >= 2
    check_forgotten(root, lance_uri, stored, done)
    assert objects_containing(s3, BOB_WORD) == []  # data files, old versions, indices: nothing left
    assert objects_containing(s3, ALICE_WORD)  # while the same scan finds what stays


def test_forget_on_a_local_folder_keeps_a_write_that_lands_meanwhile(tmp_path, monkeypatch):
    """The same on a local folder, where forget also holds the commit lock (re-entrant, so the
    writer on forget's own thread goes through): what it writes meanwhile is kept."""
    lance_uri = str(tmp_path / "lancedb")
    root, _, stored = workspace(tmp_path, lance_uri)
    done = with_concurrent_writer(monkeypatch, forget, "_purge", lance_uri, stored["alice"]["id"])
    forget_tenant("support-bot", "bob", root=root, lancedb_uri=lance_uri)
    check_forgotten(root, lance_uri, stored, done)
    left = [p for p in Path(lance_uri).rglob("*") if p.is_file() and BOB_WORD.encode() in p.read_bytes().lower()]
    assert left == []


def test_a_commit_conflict_is_retried(tmp_path, monkeypatch):
    """LanceDB reports a conflict it cannot rebase; forget retries that write and completes."""
    lance_uri = str(tmp_path / "lancedb")
    root, typed, stored = workspace(tmp_path, lance_uri)
    calls = []
    update = lancedb.table.LanceTable.update

    def conflicting_once(self, *args, **kwargs):
        calls.append(self.name)
        if len(calls) == 1:
            raise RuntimeError(f"Retryable commit conflict for version {self.version}: an Update was committed meanwhile")
        return update(self, *args, **kwargs)

    monkeypatch.setattr(lancedb.table.LanceTable, "update", conflicting_once)
    report = forget_tenant("support-bot", "bob", root=root, lancedb_uri=lance_uri)
    assert calls[0] == calls[1]  # the same table's rewrite, tried again
    assert BOB.key not in tenants_in(lance_uri)["memories"]
    assert typed.store.get_memory(ALICE.key, stored["alice"]["id"])["content"] == "Prefers invoices as PDF attachments"
    assert set(report.tables_rewritten) >= {"chunks", "memories", "memory_audit"}
