"""The ``supersessions`` table: which statement a later one replaced, and when.

One row per superseded statement (``old_ref``: ``path#Lline`` of a turn or a note line, or
``facts/<id>`` of a typed memory stored through a tool), naming its first successor and the date
it was replaced. It is written by consolidation only (``consolidation.supersession``), recomputed
from all of the tenant's statements each time, so re-running a day, backfilling days in any order
or forgetting the newer memory gives the records the statements support now. Every reader (recall
ranking, typed queries, bulletins, graph, dreaming, MCP) reads these rows and recomputes nothing.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import UTC, datetime

import polars as pl

from memory_pipeline.store.base import LanceBase, retry_commit, sql_in, sql_str, stable_id
from memory_pipeline.store.tables import SUPERSESSIONS
from memory_pipeline.text.statements import MEMORY, Statement
from memory_pipeline.text.summarize import content_words
from memory_pipeline.timeline import relation_ends
from memory_pipeline.timeline.supersede import Supersession

log = logging.getLogger(__name__)


def supersession_rows(db_or_store, tenants: str | list[str]) -> pl.DataFrame:
    """The records of these tenants (an empty frame of the right columns when there are none)."""
    tenants = [tenants] if isinstance(tenants, str) else list(tenants)
    db = getattr(db_or_store, "db", db_or_store)
    names = db.list_tables()
    if SUPERSESSIONS.name not in set(getattr(names, "tables", names)) or not tenants:
        return pl.from_arrow(SUPERSESSIONS.schema().empty_table())
    arrow = db.open_table(SUPERSESSIONS.name).search().where(sql_in("tenant", tenants)).limit(None).to_arrow()
    return pl.from_arrow(arrow)


class SupersessionStore(LanceBase):
    """The ``supersessions`` table, in the same LanceDB database as the rest of the memory."""

    def rows(self, tenant: str) -> pl.DataFrame:
        return supersession_rows(self.db, tenant)

    @retry_commit
    def replace_tenant(self, tenant: str, rows: list[dict], existing: pl.DataFrame | None = None) -> tuple[int, int]:
        """Make the tenant's records exactly ``rows`` (``existing``: the records read just before,
        if the caller has them): (written, removed)."""
        existing = self.rows(tenant) if existing is None else existing
        kept = set(existing["id"].to_list()) if existing.height else set()
        fresh = {r["id"] for r in rows}
        stale = sorted(kept - fresh)
        if rows:
            self.upsert(SUPERSESSIONS, rows)
        if stale:
            self.delete(SUPERSESSIONS, f"tenant = {sql_str(tenant)} AND {sql_in('id', stale)}")
        return len(fresh - kept), len(stale)

    @retry_commit
    def release(self, tenant: str, ref: str) -> int:
        """A forgotten statement no longer replaces anything: what it replaced stands again, or
        points at its own successor when it had one (A -> B -> C, B forgotten: A -> C). Returns the
        records changed; the next consolidation recomputes the same from the statements left."""
        rows = list(self.rows(tenant).iter_rows(named=True))
        own = next((r for r in rows if r["old_ref"] == ref), None)
        pointing = [r for r in rows if r["new_ref"] == ref]
        if own is None and not pointing:
            return 0
        gone = [own["id"]] if own is not None else [r["id"] for r in pointing]
        if own is not None and pointing:
            self.upsert(SUPERSESSIONS, [
                {**r, "new_ref": own["new_ref"], "new_kind": own["new_kind"], "new_said_at": own["new_said_at"]}
                for r in pointing
            ])
        self.delete(SUPERSESSIONS, f"tenant = {sql_str(tenant)} AND {sql_in('id', gone)}")
        relation_ends.refresh(self.uri, tenant, datetime.now(UTC))  # a relation it had ended stands again
        return len(pointing) + (own is not None)


def record_row(tenant: str, pair: Supersession, decided_at: datetime) -> dict:
    return {
        "id": stable_id("supersession", tenant, pair.old.ref),
        "tenant": tenant,
        "old_ref": pair.old.ref,
        "old_kind": pair.old.kind,
        "old_said_at": pair.old.said_at,
        "new_ref": pair.new.ref,
        "new_kind": pair.new.kind,
        "new_said_at": pair.new.said_at,
        "attribute": pair.attribute,
        "changed": list(pair.changed),
        "cues": list(pair.cues),
        "score": pair.score,
        "decided_by": pair.decided_by,
        "decided_at": decided_at,
        "old_sentence": pair.changed_part,
    }


HOLDS_SENTENCE = 0.5
"""A typed memory restates the sentence that changed when it holds at least this share of the
sentence's content words (the extractor rewrites the person, not the words)."""


def inherited_records(tenant: str, pairs: list[Supersession], statements: list[Statement], now: datetime) -> list[dict]:
    """Records of the typed memories read from a superseded statement that no record names yet.

    A typed memory restates its source: when a later statement replaced the turn or note line it
    was read from, it is replaced too, by the same successor (labelled, left out of bulletins,
    typed queries and the working memory like the statement itself). When the record names one
    sentence of a source that says more, only a memory restating that sentence inherits it."""
    named = {p.old.ref for p in pairs}
    by_source: dict[tuple[str, int], list[Statement]] = {}
    for s in statements:
        if s.kind == MEMORY and s.ref not in named and s.path != s.ref:
            by_source.setdefault((s.path, s.line), []).append(s)
    rows = []
    for pair in pairs:
        if pair.old.kind == MEMORY:
            continue
        part = pair.changed_part
        wanted = set(content_words(part)) if part else set()
        for memory in by_source.get((pair.old.path, pair.old.line), []):
            if wanted and len(wanted & set(content_words(memory.text))) < HOLDS_SENTENCE * len(wanted):
                continue  # the memory restates another sentence of the statement, which still holds
            row = record_row(tenant, replace(pair, old=replace(pair.old, ref=memory.ref, kind=MEMORY, text=memory.text)), now)
            row["old_sentence"] = None  # the memory is the sentence that changed
            rows.append(row)
            named.add(memory.ref)
    return rows
