"""LanceDB tables of consolidation: ``episodes`` (L1), ``entities``, ``relations`` (L2) and
``entity_merges`` (the history of entity deduplication).

Every write is an upsert keyed by a deterministic ``id``, so re-materializing a day rewrites the
same rows. Timestamps that record when something first happened (an episode's ``created_at``,
``expires_at`` and ``promoted_at``) are carried over from the stored row, never reset by a rerun.

``consolidation_inputs`` records what supersession decided each tenant's records from (one digest
per tenant), so a run with nothing new to decide keeps them; which sessions a run summarizes and
which episodes the graph reads are told by the episodes themselves (``ConsolidatedSessions``,
``graph_pending``). The rows of a forgotten tenant go with every other table's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

import polars as pl

from memory_pipeline.store.base import LanceBase, retry_commit, sql_in, sql_str, stable_id
from memory_pipeline.store.tables import BUILT_FROM, ENTITIES, ENTITY_MERGES, EPISODES, MEMORIES, RELATIONS

_KEEP_ON_RERUN = ("created_at", "expires_at", "promoted_at")
GRAPH_PENDING = "graph_pending = true"
"""The episodes written since the knowledge graph was last built from them."""


class ConsolidationStore(LanceBase):
    """The consolidation tables in the same LanceDB database as the L0 index."""

    def episodes(self):
        return self.open(EPISODES)

    # -- what each step last built from ----------------------------------------------------
    def built_from(self, tenant: str, step: str) -> dict[str, str]:
        """{unit: digest} the step recorded for the tenant."""
        rows = self.read(BUILT_FROM, f"tenant = {sql_str(tenant)} AND step = {sql_str(step)}", ["unit", "digest"])
        return dict(zip(rows["unit"].to_list(), rows["digest"].to_list(), strict=True))

    def record_built(self, tenant: str, step: str, digests: dict[str, str], at: datetime) -> None:
        """Record what the step built these units from (after it wrote them: a crash between
        the two only makes the next run build them again)."""
        self.upsert(BUILT_FROM, [
            {"id": stable_id("built", tenant, step, unit), "tenant": tenant, "step": step, "unit": unit,
             "digest": digest, "built_at": at}
            for unit, digest in sorted(digests.items())
        ])

    def forget_built(self, tenant: str, step: str, units: Iterable[str]) -> None:
        """The step's record of these units is gone: the next run builds them again."""
        if units := sorted(units):
            self.delete(BUILT_FROM, f"tenant = {sql_str(tenant)} AND step = {sql_str(step)} AND {sql_in('unit', units)}")

    # -- typed memories (read only: supersession and dreaming read what the memories slice wrote)
    def typed_memory_rows(self, tenant: str, where: str | None = None) -> pl.DataFrame:
        """The tenant's typed memories without their vectors (empty when there are none yet)."""
        scope = f"tenant = {sql_str(tenant)}" + (f" AND ({where})" if where else "")
        return self.read(MEMORIES, scope, [c for c in MEMORIES.names if c != "vector"])

    # -- episodes -------------------------------------------------------------------------
    def episode_rows(self, tenant: str, where: str | None = None, columns: Sequence[str] | None = None) -> pl.DataFrame:
        scope = f"tenant = {sql_str(tenant)}" + (f" AND ({where})" if where else "")
        return self.read(EPISODES, scope, columns)

    @retry_commit
    def upsert_episodes(self, rows: list[dict]) -> dict[str, int]:
        """Write episodes; a session's older versions (fewer compactions) are replaced."""
        if not rows:
            return {"inserted": 0, "updated": 0, "superseded": 0}
        table = self.episodes()
        by_tenant: dict[str, list[dict]] = {}
        for row in rows:
            by_tenant.setdefault(row["tenant"], []).append(row)
        inserted = updated = superseded = 0
        for tenant, items in by_tenant.items():
            sessions = sorted({r["session_id"] for r in items})
            existing = self.episode_rows(tenant, sql_in("session_id", sessions), ["id", "session_id", *_KEEP_ON_RERUN])
            kept = {r["id"]: r for r in existing.iter_rows(named=True)} if existing.height else {}
            for row in items:
                old = kept.get(row["id"])
                if old:
                    updated += 1
                    for column in _KEEP_ON_RERUN:
                        row[column] = old[column]
                else:
                    inserted += 1
            new_ids = {r["id"] for r in items}
            stale = [i for i in kept if i not in new_ids]
            superseded += len(stale)
            self.upsert(EPISODES, items)
            if stale:
                table.delete(sql_in("id", stale))
        return {"inserted": inserted, "updated": updated, "superseded": superseded}

    def ensure_episode_fts(self) -> bool:
        """Full-text index on ``summary`` (recall's BM25 channel), brought up to date; True when
        it covers every row."""
        return self.ensure_fts(EPISODES)

    def unpromoted_counts(self) -> dict[str, int]:
        """Unpromoted episodes per tenant (a cheap scan of two columns, for the dreaming sensor)."""
        if not self.has(EPISODES):
            return {}
        arrow = (
            self.db.open_table(EPISODES.name).search().where("promoted_at IS NULL").select(["tenant"]).limit(None).to_arrow()
        )
        counts: dict[str, int] = {}
        for tenant in arrow.column("tenant").to_pylist() if arrow.num_rows else []:
            counts[tenant] = counts.get(tenant, 0) + 1
        return counts

    @retry_commit
    def mark_promoted(self, ids: Sequence[str], at: datetime) -> None:
        if ids:
            self.episodes().update(where=sql_in("id", ids), values={"promoted_at": at})

    @retry_commit
    def mark_graphed(self, ids: Sequence[str]) -> None:
        """The graph is built from these episodes: ``semantic_graph`` no longer reads them."""
        if ids:
            self.episodes().update(where=sql_in("id", ids), values={"graph_pending": False})

    @retry_commit
    def delete_expired_episodes(self, now: datetime) -> int:
        if not self.has(EPISODES):
            return 0
        table = self.db.open_table(EPISODES.name)
        where = f"expires_at < timestamp '{now.strftime('%Y-%m-%d %H:%M:%S')}'"
        count = table.count_rows(where)
        if count:
            table.delete(where)
        return count

    # -- graph ----------------------------------------------------------------------------
    def entity_rows(self, tenant: str, columns: Sequence[str] | None = None) -> pl.DataFrame:
        return self.read(ENTITIES, f"tenant = {sql_str(tenant)}", columns)

    def relation_rows(self, tenant: str, where: str | None = None, columns: Sequence[str] | None = None) -> pl.DataFrame:
        scope = f"tenant = {sql_str(tenant)}" + (f" AND ({where})" if where else "")
        return self.read(RELATIONS, scope, columns)

    def merge_rows(self, tenant: str) -> pl.DataFrame:
        return self.read(ENTITY_MERGES, f"tenant = {sql_str(tenant)}")

    def upsert_entities(self, rows: list[dict]) -> None:
        self.upsert(ENTITIES, rows)

    def delete_entities(self, ids: Iterable[str]) -> None:
        if ids := list(ids):
            self.delete(ENTITIES, sql_in("id", ids))

    def upsert_relations(self, rows: list[dict]) -> None:
        self.upsert(RELATIONS, rows)

    def delete_relations(self, ids: Iterable[str]) -> None:
        if ids := list(ids):
            self.delete(RELATIONS, sql_in("id", ids))

    def upsert_merges(self, rows: list[dict]) -> None:
        self.upsert(ENTITY_MERGES, rows)
