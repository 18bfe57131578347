"""When a relation of the knowledge graph holds, computed in one place.

A single-valued relation (lives_in, works_at, manager, ...) is valid from when it was said until
a later statement names a different value for the same subject. Consolidation writes that
``valid_to`` (``recompute_validity``, independent of the order days were consolidated in);
readers take the dates said in the evidence into account too (``effective_validity``) and ask
whether a relation holds at a time (``valid_at``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import polars as pl

from memory_pipeline.knowledge.graph import normalize_name
from memory_pipeline.text.dates import find_when


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


def effective_validity(relations: pl.DataFrame, tz: ZoneInfo) -> pl.DataFrame:
    """Relations with validity taken from what was said, not only from when it was said.

    Consolidation dates a relation by the message that states it; "From 1 December my manager is
    Tomás" said on 18 November holds from 1 December. A relation whose evidence names a later
    date starts then (``said_at`` keeps the message time), and the single-valued relation it
    replaces ends then, so "who is Alice's manager on 25 November?" still answers Dana.
    """
    rows = relations.to_dicts()
    for row in rows:
        row["said_at"] = row["valid_from"]
        said = row["valid_from"]
        if said is not None and row.get("evidence"):
            stated = find_when(row["evidence"], utc(said), tz)
            if stated is not None and stated - utc(said) > timedelta(days=1):
                row["valid_from"] = stated
    ends = interval_ends(rows)
    for row in rows:
        if row["id"] in ends:
            row["valid_to"] = ends[row["id"]]
    return pl.DataFrame(rows, schema={**relations.schema, "said_at": relations.schema["valid_from"]}, strict=False)


def valid_at(row: dict, when: datetime) -> bool:
    start, end = row["valid_from"], row["valid_to"]
    if start is not None and utc(start) > when:
        return False
    return end is None or utc(end) > when
