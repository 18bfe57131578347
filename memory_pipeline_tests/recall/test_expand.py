"""Proves: ``expand`` walks the citations down from any summary to the turn or note line it came
from, one level at a time or all the way: a dreamed line to its episode to the exact turn it cites;
an episode to all its turns; a typed memory to its note line; a relation to its turn; a passage of a
dreamed file to its lines. It reads through the reader's scopes only (another tenant's relation is
answered as one that does not exist) and reports a pruned episode's turns directly.

Rows are written to LanceDB under ``tmp_path`` through the tables' specs, as the pipelines write
them; the workspace is the recall tests' small one plus a dreamed file.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime

import pytest

from memory_pipeline.recall.expand import ExpandError, expand
from memory_pipeline.store.base import LanceBase
from memory_pipeline.store.tables import EPISODES, MEMORIES, RELATIONS
from memory_pipeline_tests.helpers.recall import DREAMED, SESSION, build_workspace, recall_settings, write_dreamed

AT = datetime(2026, 11, 4, 9, 2, tzinfo=UTC)
TURN_2 = {"citation": f"{SESSION}#L2", "kind": "turn", "when": "2026-11-04 09:00 UTC",
          "text": "assistant: I raised your API rate limit to 2,000 requests per minute."}
TURN_4 = {"citation": f"{SESSION}#L4", "kind": "turn", "when": "2026-11-04 09:01 UTC",
          "text": "alice: Also, my invoices should go to the finance mailbox."}
EPISODE = {"citation": "episodes/ep1", "kind": "episode", "when": "2026-11-04 09:02 UTC",
           "text": "Alice's API rate limit was raised; invoices go to finance."}


def _episode(eid: str) -> dict:
    return {"id": eid, "tenant": "support-bot~alice", "agent_id": "support-bot", "user_id": "alice", "path": SESSION,
            "start_line": 1, "end_line": 4, "turn_ids": ["t1", "t2", "t3", "t4"], "summary": EPISODE["text"],
            "l0_abstract": EPISODE["text"], "key_topics": [], "source_id": "s1:0", "session_id": "s1",
            "day": "2026-11-04", "created_at": AT, "completed_at": AT, "completed_by": "marker", "expires_at": AT,
            "produced_by": "extractive", "model": "hash", "vector": [0.0] * 4}


def _memory(mid: str, tenant: str, content: str, ref: str | None) -> dict:
    return {"id": mid, "tenant": tenant, "memory_type": "preference", "content": content, "confidence": 0.8,
            "source": "markdown" if ref else "live", "source_ref": ref, "created_at": AT, "updated_at": AT,
            "content_hash": mid, "vector": [0.0] * 4}


def _relation(rid: str, tenant: str, path: str, line: int) -> dict:
    return {"id": rid, "tenant": tenant, "subject_id": "alice", "subject": "Alice", "predicate": "has rate limit",
            "object": "2,000 requests per minute", "object_type": "QUANTITY", "single_valued": True,
            "source_episode": "ep1", "path": path, "line": line, "evidence": "raised to 2,000", "rule": "attribute",
            "confidence": 0.7, "said_at": datetime(2026, 11, 4, 9, 0, 30, tzinfo=UTC)}


@pytest.fixture
def drilled(tmp_path):
    root, lance_uri = tmp_path / "agents", str(tmp_path / "lancedb")
    build_workspace(root)
    write_dreamed(root)
    base = LanceBase(lance_uri, dim=4)
    base.upsert(EPISODES, [_episode("ep1")])
    base.upsert(MEMORIES, [
        _memory("m_alice", "support-bot~alice", "Prefers email, never phone", "support-bot/users/alice/MEMORY.md#L3"),
        _memory("m_live", "support-bot~alice", "Likes short answers", None),
    ])
    base.upsert(RELATIONS, [_relation("r_alice", "support-bot~alice", SESSION, 2),
                            _relation("r_bob", "support-bot~bob", "support-bot/users/bob/MEMORY.md", 3)])
    return recall_settings(root, lance_uri)


def drill(citation: str, settings, depth: int | None = 1, user: str = "alice") -> dict:
    return expand(citation, agent="support-bot", user=user, depth=depth, settings=settings).to_dict()


def test_a_dreamed_line_expands_to_its_episode_and_the_turn_it_cites(drilled):
    line = f"- Alice, 2026-11-04: her API rate limit was raised to 2,000 a minute. [s1 · {SESSION}#L2]"
    got = drill(f"{DREAMED}#L4", drilled, depth=None)
    when = got.pop("when")
    assert when is not None
    assert got == {"citation": f"{DREAMED}#L4", "kind": "dreamed_line", "text": line,
                   "sources": [{**EPISODE, "sources": [{**TURN_2, "sources": []}]}]}
    one = drill(f"{DREAMED}#L4", drilled, depth=1)
    assert one["sources"] == [EPISODE]  # one level: the episode, its turns not read


def test_an_episode_expands_to_all_its_turns_within_the_answers_bound(drilled, monkeypatch):
    got = drill("episodes/ep1", drilled)
    assert [(s["citation"], s["kind"]) for s in got["sources"]] == [(f"{SESSION}#L{n}", "turn") for n in range(1, 5)]
    assert got["sources"][1] == TURN_2 and got["sources"][3] == TURN_4 and "truncated" not in got
    monkeypatch.setattr(sys.modules[expand.__module__], "MAX_UNITS", 2)
    cut = drill("episodes/ep1", drilled)
    assert ([s["citation"] for s in cut["sources"]], cut["truncated"]) == ([f"{SESSION}#L1", f"{SESSION}#L2"], True)


def test_a_passage_of_a_dreamed_file_expands_to_its_lines_and_a_pruned_episode_to_its_turns(drilled):
    got = drill(f"{DREAMED}#L2-L6", drilled, depth=None)
    assert got["kind"] == "dreamed_lines"
    lines = got["sources"]
    assert [s["citation"] for s in lines] == [f"{DREAMED}#L{n}" for n in (4, 5, 6)]
    assert lines[1]["sources"] == [{**EPISODE, "sources": [{**TURN_4, "sources": []}]}]
    # No episode holds lines 1-2 of a session "s9": the turns it cites stand in for it.
    assert [(s["citation"], s["kind"]) for s in lines[2]["sources"]] == [(f"{SESSION}#L1", "turn"), (f"{SESSION}#L2", "turn")]


def test_a_typed_memory_and_a_relation_expand_to_the_line_they_were_read_from(drilled):
    fact = drill("facts/m_alice", drilled)
    assert fact["kind"] == "typed_memory" and fact["text"] == "Prefers email, never phone"
    assert [(s["citation"], s["kind"], s["text"]) for s in fact["sources"]] == [
        ("support-bot/users/alice/MEMORY.md#L3", "note_lines", "Alice prefers to be contacted by email, never by phone.")]
    assert drill("facts/m_live", drilled)["sources"] == []  # stored through a tool: it is its own source
    relation = drill("relations/r_alice", drilled)
    assert relation == {"citation": "relations/r_alice", "kind": "relation", "when": "2026-11-04",
                        "text": "Alice — has rate limit: 2,000 requests per minute", "sources": [TURN_2]}


def test_another_tenants_units_read_as_missing(drilled):
    with pytest.raises(ExpandError) as theirs:
        drill("relations/r_bob", drilled)
    with pytest.raises(ExpandError) as nowhere:
        drill("relations/r_nope", drilled)
    assert str(theirs.value).replace("r_bob", "ID") == str(nowhere.value).replace("r_nope", "ID")
    with pytest.raises(ExpandError, match="no citation given"):
        drill("  ", drilled)
    # bob reads his own relation, down to his note line
    assert drill("relations/r_bob", drilled, user="bob")["sources"][0]["citation"] == "support-bot/users/bob/MEMORY.md#L3"
