"""The commands that show a tenant's rows (``memories query``, ``memories search``, ``memories
entity``, ``episodes``, ``memories stats``, ``memory audit``) read them as recall reads a tenant: kept at the table's version.

Proves: once read, a new process answers each of them without importing LanceDB, with what the
tables hold; a memory stored, updated or forgotten since is seen by the next read (the table moved),
so a kept read is never stale; the kept reads of every column of the typed memories and recall's
own read of fewer columns stay side by side; a tenant too large to keep has its search hits read
by id. Real LanceDB under tmp_path, memories stored through
the audited operations, commands run in a new process as a user runs them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from memory_pipeline.config import get_settings
from memory_pipeline.embedding import HashEmbedder
from memory_pipeline.memories.service import MemoryService
from memory_pipeline.memories.store import TypedMemoryStore
from memory_pipeline.recall.index import files as index_files
from memory_pipeline.recall.index import kept_reads
from memory_pipeline.recall.sources import TenantCache
from memory_pipeline.tenancy import Tenant
from memory_pipeline_tests.helpers import REPO
from memory_pipeline_tests.helpers.consolidation import add_episodes, store_for

ALICE = Tenant("support-bot", "alice")
WHO = ["--agent", ALICE.agent_id, "--user", ALICE.user_id]
COMMANDS = (
    ["memories", "query", *WHO, "--json"],
    ["memories", "search", "phone calls", *WHO, "--json"],
    ["memories", "entity", "Marco", "--as-of", "2026-11-20", *WHO, "--json"],
    ["episodes", *WHO, "--json"],
    ["memories", "stats", *WHO, "--json"],
    ["memory", "audit", *WHO, "--op", "store", "--op", "forget", "--json"],
)
PROBE = """
import json, sys
from memory_pipeline.cli import main
answers = []
for args in json.loads(sys.argv[1]):
    sys.argv = ["memory-pipeline", *args]
    try:
        main()
    except SystemExit as exit:
        assert not exit.code, (args, exit.code)
    print("\\x1e")
print(json.dumps("lancedb" in sys.modules))
"""


@pytest.fixture
def service(root, lance_uri):
    (root / ALICE.agent_id / "users" / ALICE.user_id).mkdir(parents=True)
    settings = get_settings().model_copy(update={"root": str(root), "lancedb_uri": lance_uri, "embedder": "hash"})
    return MemoryService(ALICE.agent_id, ALICE.user_id, settings=settings, actor="test", embedder=HashEmbedder())


def _answers(root, lance_uri) -> tuple[list, bool]:
    """Each command's JSON answer in one new process, and whether it imported LanceDB."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "MEMORY_PIPELINE_ROOT": str(root),
           "MEMORY_PIPELINE_LANCEDB_URI": lance_uri, "MEMORY_PIPELINE_EMBEDDER": "hash"}
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(COMMANDS)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    *answers, loaded = done.stdout.split("\x1e\n")
    return [json.loads(a) for a in answers], json.loads(loaded)


def test_a_new_process_answers_from_kept_reads_and_sees_every_change(service, root, lance_uri):
    kept = service.store_memory("preference", "Email only, no phone calls", occurred_at="2026-11-12T09:00")
    moved = service.store_memory("fact", "Marco Bellini is the account manager", occurred_at="2026-11-13T09:00")
    add_episodes(store_for(lance_uri), ALICE.key, 3)

    first, loaded = _answers(root, lance_uri)  # reads the tables through LanceDB, and keeps them
    assert loaded
    query, search, entity, episodes, stats, audit = first
    assert {m["id"] for m in query} == {kept["id"], moved["id"]}
    assert search[0]["id"] == kept["id"] and search[0]["has_embedding"]
    assert [m["id"] for m in entity["memories"]] == [moved["id"]]
    assert [e["session_id"] for e in episodes] == ["s2", "s1", "s0"]
    assert (stats["memories"], stats["with_embedding"], stats["audit"]) == (2, 2, {"store": 2})
    assert {t: n for t, n in stats["by_type"].items() if n} == {"preference": 1, "fact": 1}
    assert [(a["op"], a["memory_id"]) for a in audit] == [("store", moved["id"]), ("store", kept["id"])]

    again, loaded = _answers(root, lance_uri)
    assert not loaded and again == first
    # Every column of the memories is kept apart from recall's and the counts' reads of fewer of them.
    folder = index_files.tenant_files(lance_uri, "memories", ALICE.key).tenant_dir
    assert len(list(folder.glob(f"{kept_reads.KEPT}.*.arrow"))) == 4

    service.update_memory(moved["id"], content="Marco Bellini is no longer the account manager")
    service.forget_memory(kept["id"], reason="asked to forget")
    added = service.store_memory("goal", "Renew the Growth plan by March", occurred_at="2026-11-14T09:00")
    (query, search, entity, episodes, stats, audit), _ = _answers(root, lance_uri)
    assert {m["id"]: m["content"] for m in query} == {
        moved["id"]: "Marco Bellini is no longer the account manager", added["id"]: "Renew the Growth plan by March"}
    assert kept["id"] not in {m["id"] for m in search}
    assert [m["content"] for m in entity["memories"]] == ["Marco Bellini is no longer the account manager"]
    assert len(episodes) == 3
    assert (stats["memories"], stats["audit"]) == (2, {"store": 3, "update": 1, "forget": 1})
    assert {t: n for t, n in stats["by_type"].items() if n} == {"fact": 1, "goal": 1}
    assert [(a["op"], a["memory_id"]) for a in audit] == [
        ("store", added["id"]), ("forget", kept["id"]), ("store", moved["id"]), ("store", kept["id"])]


def test_a_large_tenants_hits_are_read_by_id(service, monkeypatch):
    """A tenant whose whole read is neither kept nor held (``TenantCache.kept_below`` rows or more)
    has only its hits read, by id, instead of every memory with its vector on each search."""
    service.store_memory("preference", "Email only, no phone calls", occurred_at="2026-11-12T09:00")
    service.store_memory("fact", "Marco Bellini is the account manager", occurred_at="2026-11-13T09:00")
    small = service.recall("phone calls")
    by_id = []
    read = TypedMemoryStore.memory_rows
    monkeypatch.setattr(TenantCache, "kept_below", 1)
    monkeypatch.setattr(TypedMemoryStore, "memory_rows", lambda self, *args, **kw: by_id.append(args) or read(self, *args, **kw))
    assert service.recall("phone calls") == small and small[0]["has_embedding"]
    assert len(by_id) == 1 and "IN (" in by_id[0][1]
