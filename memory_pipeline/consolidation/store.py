"""LanceDB tables of consolidation: ``episodes`` (L1), ``entities``, ``relations`` (L2) and
``entity_merges`` (the history of entity deduplication).

Every write is an upsert keyed by a deterministic ``id``, so re-materializing a day rewrites the
same rows. Timestamps that record when something first happened (an episode's ``created_at``,
``expires_at`` and ``promoted_at``) are carried over from the stored row, never reset by a rerun.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path

import polars as pl
import pyarrow as pa

from memory_pipeline.store.lance import MemoryStore, _retry_commit, sql_in, sql_str

EPISODES = "episodes"
ENTITIES = "entities"
RELATIONS = "relations"
ENTITY_MERGES = "entity_merges"

_TS = pa.timestamp("us", tz="UTC")


def stable_id(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:32]


def episodes_schema(dim: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("tenant", pa.string(), nullable=False),
            pa.field("agent_id", pa.string(), nullable=False),
            pa.field("user_id", pa.string(), nullable=False),
            pa.field("path", pa.string(), nullable=False),
            pa.field("start_line", pa.int32(), nullable=False),
            pa.field("end_line", pa.int32(), nullable=False),
            pa.field("turn_ids", pa.list_(pa.string())),
            pa.field("summary", pa.string(), nullable=False),
            pa.field("l0_abstract", pa.string(), nullable=False),
            pa.field("key_topics", pa.list_(pa.string())),
            pa.field("source_id", pa.string(), nullable=False),
            pa.field("session_id", pa.string(), nullable=False),
            pa.field("day", pa.string(), nullable=False),
            pa.field("created_at", _TS, nullable=False),
            pa.field("completed_at", _TS, nullable=False),
            pa.field("completed_by", pa.string(), nullable=False),
            pa.field("expires_at", _TS, nullable=False),
            pa.field("promoted_at", _TS),
            pa.field("produced_by", pa.string(), nullable=False),
            pa.field("llm_model", pa.string()),
            pa.field("model", pa.string(), nullable=False),
            pa.field("vector", pa.list_(pa.float32(), dim)),
        ]
    )


def entities_schema(dim: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("tenant", pa.string(), nullable=False),
            pa.field("name", pa.string(), nullable=False),
            pa.field("type", pa.string(), nullable=False),
            pa.field("aliases", pa.list_(pa.string())),
            pa.field("episode_ids", pa.list_(pa.string())),
            pa.field("first_seen", _TS),
            pa.field("last_seen", _TS),
            pa.field("vector", pa.list_(pa.float32(), dim)),
        ]
    )


RELATIONS_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("tenant", pa.string(), nullable=False),
        pa.field("subject_id", pa.string(), nullable=False),
        pa.field("subject", pa.string(), nullable=False),
        pa.field("predicate", pa.string(), nullable=False),
        pa.field("object_id", pa.string()),
        pa.field("object", pa.string(), nullable=False),
        pa.field("object_type", pa.string(), nullable=False),
        pa.field("valid_from", _TS),
        pa.field("valid_to", _TS),
        pa.field("single_valued", pa.bool_(), nullable=False),
        pa.field("source_episode", pa.string(), nullable=False),
        pa.field("path", pa.string(), nullable=False),
        pa.field("line", pa.int32(), nullable=False),
        pa.field("evidence", pa.string(), nullable=False),
        pa.field("rule", pa.string(), nullable=False),
        pa.field("confidence", pa.float32(), nullable=False),
    ]
)

MERGES_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("tenant", pa.string(), nullable=False),
        pa.field("from_id", pa.string(), nullable=False),
        pa.field("from_name", pa.string(), nullable=False),
        pa.field("into_id", pa.string(), nullable=False),
        pa.field("into_name", pa.string(), nullable=False),
        pa.field("status", pa.string(), nullable=False),  # merged | ambiguous
        pa.field("reason", pa.string(), nullable=False),
        pa.field("score", pa.float32(), nullable=False),
        pa.field("decided_at", _TS, nullable=False),
    ]
)

_KEEP_ON_RERUN = ("created_at", "expires_at", "promoted_at")


class ConsolidationStore:
    """The consolidation tables in the same LanceDB database as the L0 index."""

    def __init__(self, uri: str | Path, dim: int):
        self.base = MemoryStore(uri, dim=dim)
        self.db = self.base.db
        self.dim = dim

    def _table(self, name: str, schema: pa.Schema):
        table = self.base._open_or_create(name, schema)
        if "vector" in schema.names:
            size = getattr(table.schema.field("vector").type, "list_size", self.dim)
            if size != self.dim:
                raise RuntimeError(
                    f"the {name} table in {self.base.uri} holds {size}-dimensional vectors but the "
                    f"embedder makes {self.dim}; after changing the embedding model, drop the "
                    f"{name} table and re-materialize the consolidation partitions"
                )
        return table

    def episodes(self):
        return self._table(EPISODES, episodes_schema(self.dim))

    def entities(self):
        return self._table(ENTITIES, entities_schema(self.dim))

    def relations(self):
        return self._table(RELATIONS, RELATIONS_SCHEMA)

    def merges(self):
        return self._table(ENTITY_MERGES, MERGES_SCHEMA)

    def _schemas(self) -> dict[str, pa.Schema]:
        return {
            EPISODES: episodes_schema(self.dim),
            ENTITIES: entities_schema(self.dim),
            RELATIONS: RELATIONS_SCHEMA,
            ENTITY_MERGES: MERGES_SCHEMA,
        }

    def has(self, name: str) -> bool:
        return name in self.base.table_names()

    def _read(self, name: str, where: str, columns: Sequence[str] | None = None) -> pl.DataFrame:
        if not self.has(name):
            schema = self._schemas()[name]
            if columns:
                schema = pa.schema([schema.field(c) for c in columns])
            return pl.from_arrow(schema.empty_table())
        query = self.db.open_table(name).search().where(where)
        if columns:
            query = query.select(list(columns))
        arrow = query.limit(None).to_arrow()
        return pl.from_arrow(arrow)

    @staticmethod
    def _upsert(table, rows: pa.Table) -> None:
        if rows.num_rows:
            table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(rows)

    # -- episodes -------------------------------------------------------------------------
    def episode_rows(self, tenant: str, where: str | None = None, columns: Sequence[str] | None = None) -> pl.DataFrame:
        scope = f"tenant = {sql_str(tenant)}" + (f" AND ({where})" if where else "")
        return self._read(EPISODES, scope, columns)

    @_retry_commit
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
            self._upsert(table, pa.Table.from_pylist(items, schema=episodes_schema(self.dim)))
            if stale:
                table.delete(sql_in("id", stale))
        return {"inserted": inserted, "updated": updated, "superseded": superseded}

    @_retry_commit
    def ensure_episode_fts(self) -> bool:
        """Full-text index on ``summary`` (recall's BM25 channel), brought up to date; True when
        it covers every row. An index built on an empty table covers nothing, so wait for rows."""
        if not self.has(EPISODES):
            return True
        table = self.db.open_table(EPISODES)
        if table.count_rows() == 0:
            return True
        names = {idx.name for idx in table.list_indices()}
        if "summary_idx" not in names:
            table.create_fts_index("summary", use_tantivy=False, replace=True, with_position=False)
        elif table.index_stats("summary_idx").num_unindexed_rows:
            table.optimize()
        return int(table.index_stats("summary_idx").num_unindexed_rows) == 0

    def unpromoted_counts(self) -> dict[str, int]:
        """Unpromoted episodes per tenant (a cheap scan of two columns, for the dreaming sensor)."""
        if not self.has(EPISODES):
            return {}
        arrow = (
            self.db.open_table(EPISODES).search().where("promoted_at IS NULL").select(["tenant"]).limit(None).to_arrow()
        )
        counts: dict[str, int] = {}
        for tenant in arrow.column("tenant").to_pylist() if arrow.num_rows else []:
            counts[tenant] = counts.get(tenant, 0) + 1
        return counts

    @_retry_commit
    def mark_promoted(self, ids: Sequence[str], at: datetime) -> None:
        if ids:
            self.episodes().update(where=sql_in("id", ids), values={"promoted_at": at})

    @_retry_commit
    def delete_expired_episodes(self, now: datetime) -> int:
        if not self.has(EPISODES):
            return 0
        table = self.db.open_table(EPISODES)
        where = f"expires_at < timestamp '{now.strftime('%Y-%m-%d %H:%M:%S')}'"
        count = table.count_rows(where)
        if count:
            table.delete(where)
        return count

    # -- graph ----------------------------------------------------------------------------
    def entity_rows(self, tenant: str) -> pl.DataFrame:
        return self._read(ENTITIES, f"tenant = {sql_str(tenant)}")

    def relation_rows(self, tenant: str, where: str | None = None) -> pl.DataFrame:
        scope = f"tenant = {sql_str(tenant)}" + (f" AND ({where})" if where else "")
        return self._read(RELATIONS, scope)

    def merge_rows(self, tenant: str) -> pl.DataFrame:
        return self._read(ENTITY_MERGES, f"tenant = {sql_str(tenant)}")

    @_retry_commit
    def upsert_entities(self, rows: list[dict]) -> None:
        self._upsert(self.entities(), pa.Table.from_pylist(rows, schema=entities_schema(self.dim)))

    @_retry_commit
    def delete_entities(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        if ids:
            self.entities().delete(sql_in("id", ids))

    @_retry_commit
    def upsert_relations(self, rows: list[dict]) -> None:
        self._upsert(self.relations(), pa.Table.from_pylist(rows, schema=RELATIONS_SCHEMA))

    @_retry_commit
    def delete_relations(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        if ids:
            self.relations().delete(sql_in("id", ids))

    @_retry_commit
    def upsert_merges(self, rows: list[dict]) -> None:
        self._upsert(self.merges(), pa.Table.from_pylist(rows, schema=MERGES_SCHEMA))
