"""Sources are pluggable: an ``episodes`` table, once consolidation writes one, is searched
beside the L0 chunks with the same tenant filter, expired episodes are not recalled, an episode
is dated by its session and not by the day it was built, and a source whose table does not exist
is skipped without an error.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest

from memory_pipeline.embedding import HashEmbedder
from memory_pipeline.recall.search import search
from memory_pipeline.store.tables import EPISODES
from memory_pipeline_tests.helpers.recall import recall_settings


def _episode(tenant: str, ident: str, summary: str, expires: datetime, embedder: HashEmbedder,
             completed: datetime | None = None) -> dict:
    agent, user = tenant.split("~")
    now = datetime.now(UTC)
    return {
        "id": ident, "tenant": tenant, "agent_id": agent, "user_id": user,
        "path": f"{agent}/sessions/{user}/s1.jsonl", "start_line": 1, "end_line": 4, "turn_ids": ["t1", "t4"],
        "summary": summary, "l0_abstract": summary[:200], "key_topics": [], "source_id": ident, "session_id": "s1",
        "day": "2026-11-04", "created_at": now, "completed_at": completed or now, "completed_by": "session.completed",
        "expires_at": expires, "promoted_at": None, "produced_by": "extractive", "llm_model": None,
        "model": embedder.name, "vector": embedder.embed([summary])[0].tolist(),
    }


@pytest.fixture
def with_episodes(indexed, tmp_path, embedder):
    root, lance_uri = indexed
    copy = str(tmp_path / "lancedb")
    shutil.copytree(lance_uri, copy)
    import lancedb

    later, earlier = datetime.now(UTC) + timedelta(days=30), datetime.now(UTC) - timedelta(days=1)
    rows = [
        _episode("support-bot~alice", "e1", "Alice asked about throttled API calls; her rate limit was raised to 2,000 requests per minute.", later, embedder,
                 completed=datetime(2026, 3, 9, 14, 30, tzinfo=UTC)),
        _episode("support-bot~alice", "e2", "Alice asked about throttled API calls long ago; nothing was changed.", earlier, embedder),
        _episode("support-bot~bob", "e3", "Bob asked about throttled API calls and a rate limit for his team tier.", later, embedder),
    ]
    lancedb.connect(copy).create_table(EPISODES.name, pa.Table.from_pylist(rows, schema=EPISODES.schema(embedder.dim)))
    return root, copy


def test_episodes_are_searched_with_the_tenant_filter_and_expiry(with_episodes, embedder):
    settings = recall_settings(*with_episodes)
    results = search("throttled API calls rate limit", "support-bot", "alice", sources=["episodes"], store=with_episodes[1], embedder=embedder, settings=settings, min_score=0, k=10)
    assert [r.citation for r in results] == ["support-bot/sessions/alice/s1.jsonl#L1-L4"]
    assert results[0].source == "episodes" and results[0].turn_ids == ["t1", "t4"]
    assert results[0].when == "2026-03-09"  # its session's day, not the day consolidation built it
    mixed = search("throttled API calls rate limit", "support-bot", "alice", store=with_episodes[1], embedder=embedder, settings=settings, min_score=0, k=10)
    assert {r.source for r in mixed} >= {"episodes", "sessions"}
    assert all(r.tenant in {"support-bot~alice", "support-bot~_global"} for r in mixed)


def test_a_source_without_a_table_is_skipped(indexed, settings, embedder):
    assert search("throttled API calls", "support-bot", "alice", sources=["episodes"], store=indexed[1], embedder=embedder, settings=settings, min_score=0) == []
    assert search("throttled API calls", "support-bot", "alice", sources=["episodes", "sessions"], store=indexed[1], embedder=embedder, settings=settings, min_score=0)


def test_only_the_sources_asked_for_are_returned_when_a_later_statement_replaced_a_result(indexed, tmp_path, embedder):
    """A note replaced by a transcript turn: asked for notes only, the turn is not brought in (it
    was, by the ranking that puts a replaced result's newest statement first); the note keeps its
    label. Asked for every source, the turn (with the turn before it) ranks first."""
    from memory_pipeline.timeline.records import SupersessionStore
    from memory_pipeline.store.base import stable_id

    root, lance_uri = indexed
    copy = str(tmp_path / "lancedb")
    shutil.copytree(lance_uri, copy)
    old, new = "support-bot/users/alice/MEMORY.md#L3", "support-bot/sessions/alice/s1.jsonl#L4"
    said = datetime(2026, 11, 4, 9, 1, 30, tzinfo=UTC)
    SupersessionStore(copy).replace_tenant("support-bot~alice", [{
        "id": stable_id("supersession", "support-bot~alice", old), "tenant": "support-bot~alice",
        "old_ref": old, "old_kind": "note", "old_said_at": said - timedelta(days=30), "new_ref": new,
        "new_kind": "turn", "new_said_at": said, "attribute": "contact", "changed": [], "cues": [], "score": 0.9,
        "decided_by": "extractive", "decided_at": said, "old_sentence": None,
    }])
    settings = recall_settings(root, copy)
    query = "Alice contacted by email: invoices to the finance mailbox"
    notes = search(query, "support-bot", "alice", sources=["memory"], store=copy, embedder=embedder, settings=settings, min_score=0, k=10)
    assert {r.source for r in notes} == {"memory"}
    assert [(r.citation, r.superseded) for r in notes if r.citation.startswith("support-bot/users/alice/MEMORY.md")] == [
        ("support-bot/users/alice/MEMORY.md#L1-L3", {"by": new, "at": "2026-11-04"}),
    ]
    every = search(query, "support-bot", "alice", store=copy, embedder=embedder, settings=settings, min_score=0, k=10)
    assert every[0].citation == "support-bot/sessions/alice/s1.jsonl#L3-L4"
