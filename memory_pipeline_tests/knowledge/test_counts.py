"""``relation_counts`` (what ``memories stats`` shows of the graph): totals, the relations valid at
a time, and the predicates by count with ties in name order, so two calls print the same. Real
LanceDB under tmp_path."""

from __future__ import annotations

from datetime import UTC, datetime

from memory_pipeline.knowledge.search import relation_counts
from memory_pipeline.store.base import LanceBase
from memory_pipeline.store.tables import RELATIONS

TENANT = "support-bot~alice"


def _relation(n: int, predicate: str, tenant: str = TENANT, valid_to: datetime | None = None) -> dict:
    return {"id": f"r{n}", "tenant": tenant, "subject_id": "alice", "subject": "Alice", "predicate": predicate,
            "object": f"thing {n}", "object_type": "THING", "valid_to": valid_to, "single_valued": False,
            "source_episode": "ep1", "path": "support-bot/users/alice/MEMORY.md", "line": n, "evidence": "said",
            "rule": "svo", "confidence": 0.7, "said_at": datetime(2026, 11, 1, tzinfo=UTC)}


def test_predicates_by_count_then_name_and_only_the_tenants_own(tmp_path):
    base = LanceBase(str(tmp_path / "lancedb"), dim=4)
    ended = datetime(2026, 11, 10, tzinfo=UTC)
    base.upsert(RELATIONS, [
        _relation(1, "works_on"), _relation(2, "likes"), _relation(3, "visited"), _relation(4, "likes"),
        _relation(5, "works_on", valid_to=ended), _relation(6, "adopted"), _relation(7, "likes", tenant="support-bot~bob"),
    ])
    counts = relation_counts(base, [TENANT], when=datetime(2026, 11, 20, tzinfo=UTC))
    assert counts["total"] == 6 and counts["valid_now"] == 5 and counts["entities"] == 0
    assert list(counts["by_predicate"].items()) == [("likes", 2), ("works_on", 2), ("adopted", 1), ("visited", 1)]
