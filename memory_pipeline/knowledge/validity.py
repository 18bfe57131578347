"""Whether a stored relation holds at a time: read, never recomputed.

A relation holds from its ``valid_from`` (when it was said, or the later date it names:
``knowledge.graph.starts``) until its ``valid_to``, the copy of its supersession record's date
written by consolidation (``timeline.relation_ends``). Readers only ask ``valid_at``, so the graph, the
dreamed file, run metadata and every tool show the same dates.
"""

from __future__ import annotations

from datetime import UTC, datetime


def utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def valid_at(row: dict, when: datetime) -> bool:
    start, end = row["valid_from"], row["valid_to"]
    if start is not None and utc(start) > when:
        return False
    return end is None or utc(end) > when
