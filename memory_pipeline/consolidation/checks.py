"""Data checks of consolidation's layers, one tenant at a time: plain functions returning
(passed, metadata), evaluated by the assets after they write (see ``CHECKS`` for what each
guards and whether a failure stops the steps downstream).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from memory_pipeline.consolidation.store import ConsolidationStore
from memory_pipeline.knowledge.validity import utc
from memory_pipeline.text.scrub import scrub_secrets
from memory_pipeline.timeline.records import supersession_rows
from memory_pipeline.timeline.relation_ends import RELATION, relation_ref

EPISODES_CHECK = "episodes_unique_and_embedded"
RELATIONS_CHECK = "relations_valid"
DEDUP_CHECK = "no_relation_to_a_merged_entity"
DREAMING_CHECK = "dreamed_files_promoted_and_clean"

Outcome = tuple[bool, dict[str, Any]]

CHECKS = {
    EPISODES_CHECK: (
        "Every completed session has exactly one episode of the tenant and every episode a vector: "
        "the graph and dreaming read episodes, so a failure stops them.",
        True,
    ),
    RELATIONS_CHECK: (
        "Every relation joins entities of the tenant, no interval ends before it starts, a "
        "single-valued fact (lives in, works at) has at most one open value, and every relation's "
        "valid_to is its supersession record's date (none without one): stops entity_dedup.",
        True,
    ),
    DEDUP_CHECK: (
        "No entity merged into another is still stored or still named by a relation.",
        True,
    ),
    DREAMING_CHECK: (
        "Every dreamed file is inside the tenant's _system/dreaming folder, holds no secret, and "
        "every episode it promoted is marked promoted (so it is not dreamed twice): the L0 index "
        "reads the file, so a failure fails the run.",
        True,
    ),
}
"""check name -> (description, blocking)."""


def check_episodes(store: ConsolidationStore, tenant: str) -> Outcome:
    rows = store.episode_rows(tenant, columns=["session_id", "source_id", "vector"])
    duplicates = rows.filter(pl.col("session_id").is_duplicated())["session_id"].unique().to_list() if rows.height else []
    missing = rows.filter(pl.col("vector").is_null())["source_id"].to_list() if rows.height else []
    return not duplicates and not missing, {
        "episodes": rows.height, "sessions_with_two_episodes": sorted(duplicates)[:20], "episodes_without_vector": missing[:20],
    }


def check_relations(store: ConsolidationStore, tenant: str) -> Outcome:
    entities = set(store.entity_rows(tenant, columns=["id"])["id"].to_list())
    relations = store.relation_rows(tenant, columns=[
        "id", "subject_id", "object_id", "object", "predicate", "single_valued", "valid_from", "valid_to",
    ])
    ends = {
        r["old_ref"]: utc(r["new_said_at"]) for r in supersession_rows(store.db, tenant).iter_rows(named=True)
        if r["old_kind"] == RELATION
    }
    dangling, reversed_, doubly_open, unrecorded = [], [], [], []
    open_single: dict[tuple[str, str], list[str]] = {}
    for r in relations.iter_rows(named=True):
        if ends.get(relation_ref(r["id"])) != (utc(r["valid_to"]) if r["valid_to"] is not None else None):
            unrecorded.append(r["id"])
        if r["subject_id"] not in entities or (r["object_id"] is not None and r["object_id"] not in entities):
            dangling.append(r["id"])
        if r["valid_from"] is not None and r["valid_to"] is not None and r["valid_to"] < r["valid_from"]:
            reversed_.append(r["id"])
        if r["single_valued"] and r["valid_to"] is None:
            open_single.setdefault((r["subject_id"], r["predicate"]), []).append(r["object"])
    doubly_open = [f"{s} {p}: {sorted(set(objs))}" for (s, p), objs in open_single.items() if len(set(objs)) > 1]
    return not (dangling or reversed_ or doubly_open or unrecorded), {
        "relations": relations.height, "dangling_relations": dangling[:20], "ends_before_start": reversed_[:20],
        "single_valued_with_two_open_values": sorted(doubly_open)[:20],
        "valid_to_not_its_record": unrecorded[:20],
    }


def check_dedup(store: ConsolidationStore, tenant: str) -> Outcome:
    merges = store.merge_rows(tenant)
    merged = set(merges.filter(pl.col("status") == "merged")["from_id"].to_list()) if merges.height else set()
    entities = set(store.entity_rows(tenant, columns=["id"])["id"].to_list())
    relations = store.relation_rows(tenant, columns=["subject_id", "object_id"])
    named = set(relations["subject_id"].to_list()) | set(relations["object_id"].drop_nulls().to_list()) if relations.height else set()
    still_stored, still_named = sorted(merged & entities), sorted(merged & named)
    return not (still_stored or still_named), {
        "merged_entities": len(merged), "merged_but_stored": still_stored[:20], "merged_but_in_relations": still_named[:20],
    }


def check_dreaming(root: Path, store: ConsolidationStore, tenant: str, files: list[Path], promoted_ids: list[str]) -> Outcome:
    folder = root.resolve()
    outside, with_secrets = [], []
    for path in files:
        resolved = path.resolve()
        if not resolved.is_relative_to(folder) or "_system/dreaming" not in resolved.relative_to(folder).as_posix():
            outside.append(str(path))
        elif resolved.exists() and any(scrub_secrets(resolved.read_text(encoding="utf-8")).counts.values()):
            with_secrets.append(resolved.relative_to(folder).as_posix())
    unmarked: list[str] = []
    if promoted_ids:
        rows = store.episode_rows(tenant, columns=["id", "promoted_at"])
        unmarked = sorted(set(promoted_ids) - set(rows.filter(pl.col("promoted_at").is_not_null())["id"].to_list()))
    return not (outside or with_secrets or unmarked), {
        "files": len(files), "outside_the_dreaming_folder": outside, "files_with_a_secret": with_secrets,
        "promoted_but_unmarked": unmarked[:20],
    }
