"""Store, update, forget and skip each write one audit row, and forgetting leaves no trace.

The audit is what an operator reads to learn why a memory changed, so each test asserts on the
whole row; forgetting is checked on disk, by scanning every file of the LanceDB folder for the
forgotten text, because a delete in LanceDB only marks a row until files are rewritten.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_pipeline.config import Settings
from memory_pipeline.embedding import HashEmbedder
from memory_pipeline.memories.operations import MemoryNotFoundError, MemoryOperationError, ReadOnlyError, TypedMemories
from memory_pipeline.memories.service import MemoryService
from memory_pipeline.recall.sources import TenantCache
from memory_pipeline.store.base import COMPACT_AT_FRAGMENTS, fragment_count
from memory_pipeline.store.tables import MEMORIES
from memory_pipeline.tenancy import Tenant

ALICE = Tenant("support-bot", "alice")


@pytest.fixture
def typed(lance_uri: str) -> TypedMemories:
    return TypedMemories.open(lance_uri, HashEmbedder())


def _audit(typed: TypedMemories, mid: str) -> list[dict]:
    rows = typed.store.audit_rows(ALICE.key, mid).to_dicts()
    return [{k: r[k] for k in ("memory_id", "op", "memory_type", "fields", "reason", "actor")} for r in rows]


def files_containing(folder: str, needle: str) -> list[str]:
    needle_bytes = needle.lower().encode()
    return sorted(
        str(p.relative_to(folder)) for p in Path(folder).rglob("*")
        if p.is_file() and needle_bytes in p.read_bytes().lower()
    )


def test_store_writes_the_memory_and_one_audit_row(typed):
    stored = typed.store_memory(ALICE, "preference", "Prefers dark mode in Dashboards", reasoning="said twice", actor="test")
    row = typed.store.get_memory(ALICE.key, stored["id"])
    assert (row["memory_type"], row["content"], row["reasoning"], row["source"]) == (
        "preference", "Prefers dark mode in Dashboards", "said twice", "live")
    assert stored["has_embedding"] is True
    assert _audit(typed, stored["id"]) == [{
        "memory_id": stored["id"], "op": "store", "memory_type": "preference",
        "fields": ["content", "reasoning"], "reason": "said twice", "actor": "test",
    }]


def test_storing_the_same_content_twice_keeps_one_row(typed):
    first = typed.store_memory(ALICE, "fact", "Workspace is ws_tidewater")
    second = typed.store_memory(ALICE, "fact", "workspace is  ws_tidewater.")
    assert first["id"] == second["id"]
    assert typed.store.memory_rows(ALICE.key).height == 1
    assert second["created_at"] == first["created_at"]


def _fragments(typed: TypedMemories, name: str) -> int:
    return fragment_count(typed.store.db.open_table(name))


def test_stores_compact_the_tables_only_once_they_hold_many_fragments(typed):
    first = typed.store_memory(ALICE, "fact", "The nightly loader runs at 02:00")
    table = typed.store.memories()
    assert [i.name for i in table.list_indices()] == [MEMORIES.fts_index]  # built with the first row
    typed.store_memory(ALICE, "fact", "The nightly loader writes to the archive bucket")
    # Each store adds a fragment and no store compacts them all: an optimize after each one grew
    # with the versions of the day (bench/memory_store.py).
    assert _fragments(typed, "memories") == _fragments(typed, "memory_audit") == 2
    for i in range(2 * COMPACT_AT_FRAGMENTS):
        typed.store_memory(ALICE, "fact", f"Filler fact number {i} about the nightly loader")
        assert _fragments(typed, "memories") < COMPACT_AT_FRAGMENTS
        assert _fragments(typed, "memory_audit") < COMPACT_AT_FRAGMENTS
    typed.update_memory(ALICE, first["id"], content="The nightly loader runs at 03:00", reason="moved")
    rows = typed.store.memory_rows(ALICE.key)
    assert rows.height == 2 + 2 * COMPACT_AT_FRAGMENTS
    assert "The nightly loader runs at 03:00" in rows["content"].to_list()
    assert typed.store.audit_rows(ALICE.key).height == 3 + 2 * COMPACT_AT_FRAGMENTS
    assert typed.store.memories().search("archive bucket", query_type="fts").limit(1).to_list()[0]["content"] == (
        "The nightly loader writes to the archive bucket")


def test_update_records_the_changed_fields_and_reason(typed):
    stored = typed.store_memory(ALICE, "event", "PG16 cutover on Saturday 21 November")
    updated = typed.update_memory(
        ALICE, stored["id"], content="PG16 cutover on Saturday 5 December", confidence=0.9,
        reason="moved after the change freeze", actor="test",
    )
    assert updated["content"] == "PG16 cutover on Saturday 5 December"
    assert updated["id"] == stored["id"]
    assert _audit(typed, stored["id"])[-1] == {
        "memory_id": stored["id"], "op": "update", "memory_type": "event",
        "fields": ["confidence", "content"], "reason": "moved after the change freeze", "actor": "test",
    }


def test_update_of_an_unknown_id_or_with_nothing_new_is_refused(typed):
    stored = typed.store_memory(ALICE, "fact", "Renewal is on 2027-03-01", confidence=0.8)
    with pytest.raises(MemoryNotFoundError, match="no memory"):
        typed.update_memory(ALICE, "m_" + "0" * 24, content="x")
    with pytest.raises(MemoryOperationError, match="nothing to update"):
        typed.update_memory(ALICE, stored["id"], confidence=0.8)


def test_update_with_a_refused_reason_changes_nothing(typed):
    stored = typed.store_memory(ALICE, "event", "Offsite on Friday 4 December", actor="test")
    with pytest.raises(MemoryOperationError, match="reason is 1001 characters"):
        typed.update_memory(ALICE, stored["id"], content="Offsite on Friday 11 December", reason="x" * 1001)
    # Refused before the write: no change without the audit row that says why.
    assert typed.store.get_memory(ALICE.key, stored["id"])["content"] == "Offsite on Friday 4 December"
    assert [r["op"] for r in _audit(typed, stored["id"])] == ["store"]


def test_forget_removes_the_content_from_every_file_and_keeps_only_id_reason_time(typed, lance_uri):
    for i in range(40):  # enough rows that a lone delete would not trigger a rewrite by itself
        typed.store_memory(ALICE, "fact", f"Filler fact number {i} about the nightly loader")
    secret = "Alice's locker code is Quokkazebra-5521"
    stored = typed.store_memory(ALICE, "fact", secret, reasoning="mentioned Quokkazebra once")
    typed.update_memory(ALICE, stored["id"], confidence=0.4, reason="unsure")
    assert files_containing(lance_uri, "quokkazebra")  # it is on disk before
    # and in the read recall keeps of this small tenant's memories (recall/index/files.py)
    TenantCache(lance_uri).read_tenant("memories", ALICE.key, ["id", "content"])
    assert any(f.startswith("_recall_index/memories/") for f in files_containing(lance_uri, "quokkazebra"))

    result = typed.forget_memory(ALICE, stored["id"], reason="user asked to forget it", actor="test")

    assert result == {"id": stored["id"], "forgotten": True, "reason": "user asked to forget it"}
    assert files_containing(lance_uri, "quokkazebra") == []
    assert typed.store.get_memory(ALICE.key, stored["id"]) is None
    assert typed.store.memory_rows(ALICE.key).height == 40
    # Earlier reasons may quote what was forgotten: they are dropped; the rows themselves stay.
    assert _audit(typed, stored["id"]) == [
        {"memory_id": stored["id"], "op": "store", "memory_type": "fact", "fields": ["content", "reasoning"],
         "reason": None, "actor": "cli"},
        {"memory_id": stored["id"], "op": "update", "memory_type": "fact", "fields": ["confidence"],
         "reason": None, "actor": "cli"},
        {"memory_id": stored["id"], "op": "forget", "memory_type": None, "fields": [],
         "reason": "user asked to forget it", "actor": "test"},
    ]
    # Full-text search still works after the index rebuild, and does not find the forgotten row.
    table = typed.store.memories()
    assert table.search("quokkazebra", query_type="fts").limit(5).to_list() == []
    assert len(table.search("loader", query_type="fts").limit(50).to_list()) == 40


def test_skip_records_a_decision_without_the_content(typed):
    skipped = typed.skip_memory(ALICE, "Had coffee this morning", "small talk", actor="test")
    assert typed.store.memory_rows(ALICE.key).height == 0
    audit = _audit(typed, skipped["id"])
    assert audit == [{
        "memory_id": skipped["id"], "op": "skip", "memory_type": "observation", "fields": [],
        "reason": "small talk", "actor": "test",
    }]
    assert skipped["id"] in typed.store.blocked_ids(ALICE.key)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda g: g.store_memory(ALICE, "feeling", "x y z"), "unknown memory_type"),
        (lambda g: g.store_memory(ALICE, "fact", "   "), "content must be a non-empty string"),
        (lambda g: g.store_memory(ALICE, "fact", "ok", confidence=3), "between 0 and 1"),
        (lambda g: g.store_memory(ALICE, "fact", "x" * 5000), "limit is 4000"),
        (lambda g: g.forget_memory(ALICE, "m_" + "1" * 24, reason=""), "reason must be a non-empty string"),
    ],
)
def test_bad_input_is_refused_with_a_clear_message(typed, call, message):
    with pytest.raises(MemoryOperationError, match=message):
        call(typed)


def test_a_team_member_may_read_but_not_write(lance_uri, root):
    settings = Settings(root=str(root), lancedb_uri=lance_uri, embedder="hash", teams={"helper-bot": "support-bot"})
    leader = MemoryService("support-bot", "alice", settings=settings)
    leader.store_memory("preference", "Prefers concise answers")
    member = MemoryService("helper-bot", "alice", settings=settings)
    assert member.read_only
    with pytest.raises(ReadOnlyError, match="memory is read-only for team members"):
        member.store_memory("fact", "anything")
    with pytest.raises(ReadOnlyError):
        member.forget_memory("m_" + "0" * 24, "x")
    # The leader's memory is the member's fallback for reads.
    assert [m["content"] for m in member.query(memory_type="preference")] == ["Prefers concise answers"]
