"""Knowledge-graph search: an entity, its relations valid now or as of a time, its neighbours.

Entities and relations are written by consolidation (``semantic_graph``, ``entity_dedup``); this
module only reads them, with the typed memories that mention the entity alongside. A relation
holds at time t when ``valid_from <= t`` (or unknown) and ``valid_to`` is unset or after t
(``knowledge.validity``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from rapidfuzz import fuzz, process

from memory_pipeline.knowledge.graph import normalize_name
from memory_pipeline.knowledge.validity import utc, valid_at
from memory_pipeline.recall.sources import tenant_cache
from memory_pipeline.recall.index.kept_reads import read_tenants
from memory_pipeline.store.base import LanceBase
from memory_pipeline.store.tables import ENTITIES, MEMORIES, RELATIONS, TableSpec

if TYPE_CHECKING:  # imported where a frame is made: polars takes 0.5 s to import
    import polars as pl

MATCH_THRESHOLD = 85


class KnowledgeQueryError(ValueError):
    """The question cannot be asked as given; the message says why."""


def knowledge_graph_search(
    store: LanceBase,
    entity: str,
    scopes: Sequence[list[str]],
    *,
    as_of: datetime | None = None,
    tz: ZoneInfo | None = None,
    include_history: bool = False,
    max_results: int = 20,
    show_memory: Callable[[dict], dict] = dict,
) -> dict:
    """What the graph knows about ``entity``, as of ``as_of`` (default now).

    ``scopes`` are tenant lists, best first: a later one is read only when the earlier ones know
    nothing. ``show_memory`` turns a typed memory row that mentions the entity into its answer.
    """
    if not entity or not entity.strip() or len(entity) > 200:
        raise KnowledgeQueryError("entity must be a name of 1 to 200 characters")
    when = (as_of or datetime.now(UTC)).astimezone(UTC)
    wanted = normalize_name(entity)
    for tenants in scopes:
        if not tenants:
            continue
        found = _search(store, tenants, entity, wanted, when, include_history, max_results, tz or ZoneInfo("UTC"),
                        show_memory)
        if found["entities"] or found["relations"] or found["memories"]:
            return found
    return {"entity": entity, "as_of": when.isoformat(), "entities": [], "relations": [], "neighbours": [],
            "memories": [], "note": _empty_note(store)}


def _empty_note(store: LanceBase) -> str:
    if RELATIONS.name not in tenant_cache(store.uri).table_names():
        return "the knowledge graph is empty: run consolidation (semantic_graph) for this tenant"
    return "nothing known about this entity"


def _read(store: LanceBase, spec: TableSpec, tenants: list[str]) -> pl.DataFrame:
    """The tenants' rows of ``spec`` but their vectors, read as recall reads a tenant: a new
    process reads a small tenant's back from the file kept at the table's version, without LanceDB."""
    return read_tenants(store.uri, spec, tenants)


def _search(store, tenants, entity, wanted, when, include_history, max_results, tz, show_memory) -> dict:
    import polars as pl

    entities = _read(store, ENTITIES, tenants)
    matched: dict[str, str] = {}  # entity id -> name
    if entities.height:
        names = {}
        for row in entities.select("id", "name", "aliases").iter_rows(named=True):
            for name in [row["name"], *(row["aliases"] or [])]:
                names[(row["id"], name)] = normalize_name(name)
        for _, score, (eid, name) in process.extract(wanted, names, scorer=fuzz.token_set_ratio, limit=10):
            if score >= MATCH_THRESHOLD:
                matched.setdefault(eid, name)
    relations = _read(store, RELATIONS, tenants)
    rel_rows: list[dict] = []
    if relations.height:
        by_id = pl.col("subject_id").is_in(list(matched)) | pl.col("object_id").is_in(list(matched))
        by_name = pl.col("subject").map_elements(normalize_name, return_dtype=pl.String).eq(wanted) | pl.col(
            "object").map_elements(normalize_name, return_dtype=pl.String).eq(wanted)
        hits = relations.filter(by_id | by_name)
        for row in hits.sort("valid_from", nulls_last=True).iter_rows(named=True):
            valid = valid_at(row, when)
            if valid or include_history:
                rel_rows.append({
                    "subject": row["subject"], "predicate": row["predicate"], "object": row["object"],
                    "valid_from": _iso(row["valid_from"]), "valid_to": _iso(row["valid_to"]), "valid": valid,
                    "said_at": _iso(row.get("said_at") or row["valid_from"]),
                    "confidence": round(float(row["confidence"]), 3), "evidence": row["evidence"],
                    "citation": f"{row['path']}#L{row['line']}",
                })
    ids = set(matched)
    neighbours = sorted({
        r["object"] if normalize_name(r["subject"]) == wanted or r["subject"] in matched.values() else r["subject"]
        for r in rel_rows if r["valid"]
    } - {entity})
    memories = _read(store, MEMORIES, tenants)
    mentions = []
    if memories.height:
        names = {entity.casefold(), *(n.casefold() for n in matched.values())}
        mask = memories["content"].map_elements(
            lambda text: any(n in text.casefold() for n in names), return_dtype=pl.Boolean
        )
        mentioned = memories.filter(mask).sort("updated_at", descending=True).head(max_results)
        mentions = [show_memory(r) for r in mentioned.iter_rows(named=True)]
    ents = entities.filter(pl.col("id").is_in(list(ids))) if ids else pl.DataFrame()
    return {
        "entity": entity,
        "as_of": when.isoformat(),
        "entities": [
            {"id": r["id"], "name": r["name"], "type": r["type"], "aliases": r["aliases"] or []}
            for r in (ents.iter_rows(named=True) if ents.height else [])
        ],
        "relations": rel_rows[:max_results],
        "neighbours": neighbours,
        "memories": mentions,
    }


def _iso(value: datetime | None) -> str | None:
    return utc(value).isoformat() if value is not None else None


def relation_counts(store: LanceBase, tenants: list[str], when: datetime | None = None) -> dict:
    """Relations in the graph for these tenants: total, valid now, and per predicate."""
    relations = _read(store, RELATIONS, tenants)
    if not relations.height:
        return {"total": 0, "valid_now": 0, "by_predicate": {}, "entities": _read(store, ENTITIES, tenants).height}
    when = when or datetime.now(UTC)
    valid = sum(valid_at(r, when) for r in relations.select("valid_from", "valid_to").iter_rows(named=True))
    counts = relations.group_by("predicate").len().sort(["len", "predicate"], descending=[True, False])
    return {
        "total": relations.height,
        "valid_now": valid,
        "by_predicate": dict(zip(counts["predicate"].to_list(), counts["len"].to_list())),
        "entities": _read(store, ENTITIES, tenants).height,
    }
