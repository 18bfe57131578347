"""When a relation of the knowledge graph holds, computed in one place.

A single-valued relation (lives_in, works_at, manager, ...) holds from its ``valid_from`` (when
it was said, or the later date it names: ``knowledge.graph.starts``) until a later relation of a
different value for the same subject starts. Consolidation writes that ``valid_to``
(``recompute_validity``, independent of the order days were consolidated in), once; readers ask
whether a stored relation holds at a time (``valid_at``) and recompute nothing, so the graph, the
dreamed file, run metadata and every tool show the same dates.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime

from memory_pipeline.knowledge.graph import normalize_name


def utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _object_key(row: dict) -> str:
    return row.get("object_id") or normalize_name(row["object"])


def interval_ends(rows: Sequence[dict]) -> dict[str, datetime | None]:
    """The ``valid_to`` of every single-valued relation, by id: when, per (subject, predicate)
    in the order said, a later relation names a different object (None while none does)."""
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for row in rows:
        if row.get("single_valued"):
            groups[(row["subject_id"], row["predicate"])].append(row)
    floor = datetime.min.replace(tzinfo=UTC)
    ends: dict[str, datetime | None] = {}
    for items in groups.values():
        items.sort(key=lambda r: (utc(r["valid_from"]) if r["valid_from"] else floor, r["id"]))
        for i, row in enumerate(items):
            ends[row["id"]] = next(
                (later["valid_from"] for later in items[i + 1 :]
                 if _object_key(later) != _object_key(row) and later["valid_from"] is not None),
                None,
            )
    return ends


def recompute_validity(rows: Sequence[dict]) -> list[dict]:
    """Rows of single-valued relations whose ``valid_to`` changes, with the new value.

    Recomputing from all rows makes the result independent of the order in which days were
    consolidated (a backfill may run them in any order).
    """
    ends = interval_ends(rows)
    return [{**row, "valid_to": ends[row["id"]]} for row in rows if row["id"] in ends and row["valid_to"] != ends[row["id"]]]


def valid_at(row: dict, when: datetime) -> bool:
    start, end = row["valid_from"], row["valid_to"]
    if start is not None and utc(start) > when:
        return False
    return end is None or utc(end) > when
