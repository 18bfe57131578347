"""The audit log listed, not only counted.

Proves: ``MemoryService.audit`` and ``memory audit`` list a user's audit rows newest first, filtered
by action, memory type and time (a span back from now or local dates), whole rows compared; bad
filters are one-line errors (exit 2); another user's audit is never listed.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import dagster as dg
import pytest
from rich.console import Console
from typer.testing import CliRunner

from memory_pipeline.cli import output as cli_output
from memory_pipeline.config import get_settings
from memory_pipeline.embedding import HashEmbedder
from memory_pipeline.memories.operations import MemoryOperationError
from memory_pipeline.memories.service import MemoryService
from memory_pipeline_tests.cli_env import cli_app, run


@pytest.fixture
def app(root, lance_uri, tmp_path, monkeypatch):
    for user in ("alice", "bob"):
        (root / "support-bot" / "users" / user).mkdir(parents=True)
    yield cli_app(monkeypatch, root, lance_uri, tmp_path / "dagster_home", dg.Definitions())
    get_settings.cache_clear()


def service(user: str) -> MemoryService:
    return MemoryService("support-bot", user, actor="test", embedder=HashEmbedder())


def test_filters_by_action_type_and_time(app, monkeypatch):
    alice = service("alice")
    todo = alice.store_memory("todo", "Send the renewal statement")
    pref = alice.store_memory("preference", "Email only, no phone calls")
    alice.update_memory(pref["id"], reason="she confirmed", confidence=0.95)
    alice.forget_memory(todo["id"], reason="sent")
    bobs = service("bob").store_memory("todo", "Call Bob back")

    listed = alice.audit()
    assert [(r["op"], r["memory_id"], r["memory_type"], r["fields"], r["reason"], r["actor"], r["tenant"]) for r in listed] == [
        ("forget", todo["id"], None, [], "sent", "test", "support-bot~alice"),
        ("update", pref["id"], "preference", ["confidence"], "she confirmed", "test", "support-bot~alice"),
        ("store", pref["id"], "preference", ["content"], None, "test", "support-bot~alice"),
        ("store", todo["id"], "todo", ["content"], None, "test", "support-bot~alice"),
    ]
    assert alice.audit(op=["store", "update"], memory_type=["preference"]) == listed[1:3]
    assert alice.audit(limit=1) == listed[:1]
    assert alice.audit(since="1h") == listed
    assert alice.audit(since="1h", now=datetime.now(UTC) + timedelta(days=1)) == []
    assert alice.audit(until="2026-01-01") == []
    with pytest.raises(MemoryOperationError, match="unknown audit action 'delete': use one of store, update, forget, skip"):
        alice.audit(op=["delete"])
    with pytest.raises(MemoryOperationError, match="since 'soon'"):
        alice.audit(since="soon")

    as_json = json.loads(run(app, "memory", "audit", "-a", "support-bot", "-u", "alice", "--op", "forget", "--json"))
    assert as_json == listed[:1]
    monkeypatch.setattr(cli_output, "console", lambda: Console(width=50))  # a narrow terminal: ids and times stay whole
    listing = run(app, "memory", "audit", "-a", "support-bot", "-u", "bob").splitlines()
    at = service("bob").audit()[0]["at"][:16].replace("T", " ").removesuffix(" 00:00")  # midnight: the day alone
    assert listing == ["audit of support-bot/bob", f"{at}  store  {bobs['id']}  todo  fields: content  by test"]
    bad = CliRunner().invoke(app, ["memory", "audit", "-a", "support-bot", "-u", "alice", "--since", "yesterday"])
    assert bad.exit_code == 2 and bad.output.count("\n") == 1 and "since" in bad.output
