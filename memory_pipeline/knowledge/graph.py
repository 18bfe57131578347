"""The semantic graph (L2) as plain functions: entity rows, relation rows, validity intervals.

Entities are keyed by their normalized name within a tenant, so "Alice" said in two sessions is
one entity; an entity merged away by ``entity_dedup`` resolves to the entity it was merged into.
Relations are keyed by (episode, subject, predicate, object) as said, so re-reading an episode
rewrites the same rows. A relation holds from when it was said (``said_at``) or from the later
date its statement names ("from 1 December my manager is Tomás", said on 18 November, holds from
1 December): ``valid_from``, decided here at write time. It holds until its supersession record
says it ended (a later relation of another value, or a later statement replacing its sentence:
``timeline.relation_ends``): the old relation's ``valid_to`` is closed, never deleted, so history queries
still see it. Readers use the stored dates and recompute nothing.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from memory_pipeline.knowledge.relations import Extraction
from memory_pipeline.store.base import stable_id
from memory_pipeline.text.dates import find_when

_TITLES = frozenset({"dr", "mr", "mrs", "ms", "miss", "prof", "professor", "sir", "dame"})
_NON_WORD_RE = re.compile(r"[^\w]+")


def normalize_name(name: str) -> str:
    """Casefolded, accents and titles removed, punctuation as spaces: "Dr. Tomás" -> "tomas"."""
    text = unicodedata.normalize("NFKD", name)
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).casefold()
    text = re.sub(r"['’]s\b", "", text)
    words = [w for w in _NON_WORD_RE.sub(" ", text).split() if w not in _TITLES]
    return " ".join(words)


def starts(evidence: str, said: datetime | None, tz: ZoneInfo) -> datetime | None:
    """When a statement starts holding: the date it names when that is more than a day after it
    was said, else when it was said."""
    if said is None or not evidence:
        return said
    said_utc = said.replace(tzinfo=UTC) if said.tzinfo is None else said.astimezone(UTC)
    stated = find_when(evidence, said_utc, tz)
    return stated if stated is not None and stated - said_utc > timedelta(days=1) else said


def entity_id(tenant: str, name: str) -> str:
    return stable_id("entity", tenant, normalize_name(name))


def resolver(merge_rows: Iterable[dict]):
    """A function mapping an entity id to the id it was (transitively) merged into."""
    into = {r["from_id"]: r["into_id"] for r in merge_rows if r["status"] == "merged"}

    def resolve(eid: str) -> str:
        seen = set()
        while eid in into and eid not in seen:
            seen.add(eid)
            eid = into[eid]
        return eid

    return resolve


def _better_name(current: str | None, candidate: str) -> str:
    """Prefer a capitalized surface form ("Alice" over the user id "alice"), then the first seen."""
    if current is None:
        return candidate
    if current.islower() and not candidate.islower():
        return candidate
    return current


def graph_rows(
    tenant: str,
    episode: dict,
    extraction: Extraction,
    existing_entities: dict[str, dict],
    resolve,
    tz: ZoneInfo | None = None,
) -> tuple[dict[str, dict], list[dict]]:
    """Entity rows (merged with the stored ones) and relation rows of one episode; a date a
    statement names is read in ``tz`` (the user's timezone)."""
    entities: dict[str, dict] = {}
    types: dict[str, Counter] = defaultdict(Counter)

    def touch(name: str, etype: str, ts: datetime | None) -> str:
        raw_id = entity_id(tenant, name)
        eid = resolve(raw_id)
        row = entities.get(eid)
        if row is None:
            stored = existing_entities.get(eid)
            row = dict(stored) if stored else {
                "id": eid, "tenant": tenant, "name": None, "type": etype, "aliases": [],
                "episode_ids": [], "first_seen": None, "last_seen": None, "vector": None,
            }
            row["aliases"] = list(row["aliases"] or [])
            row["episode_ids"] = list(row["episode_ids"] or [])
            entities[eid] = row
        if raw_id == eid or row["name"] is None:
            row["name"] = _better_name(row["name"], name)
        elif normalize_name(name) != normalize_name(row["name"] or "") and name not in row["aliases"]:
            row["aliases"] = sorted({*row["aliases"], name})  # a name merged into this entity
        if episode["id"] not in row["episode_ids"]:
            row["episode_ids"] = sorted({*row["episode_ids"], episode["id"]})
        if ts is not None:
            row["first_seen"] = min(filter(None, [row["first_seen"], ts]))
            row["last_seen"] = max(filter(None, [row["last_seen"], ts]))
        types[eid][etype] += 1
        return eid

    for name, etype, _, ts in extraction.mentions:
        touch(name, etype, ts)
    relations: dict[str, dict] = {}
    for fact in extraction.facts:
        ts = fact.ts or episode["completed_at"]
        subject_id = touch(fact.subject, fact.subject_type, ts)
        object_id = None if fact.object_type == "CONCEPT" else touch(fact.object, fact.object_type, ts)
        rid = stable_id(
            "relation", tenant, episode["id"], normalize_name(fact.subject), fact.predicate, normalize_name(fact.object)
        )
        if rid in relations:
            continue  # the same fact restated later in the session: the first statement counts
        relations[rid] = {
            "id": rid,
            "tenant": tenant,
            "subject_id": subject_id,
            "subject": fact.subject,
            "predicate": fact.predicate,
            "object_id": object_id,
            "object": fact.object,
            "object_type": fact.object_type,
            "valid_from": starts(fact.evidence, ts, tz or ZoneInfo("UTC")),
            "valid_to": None,
            "single_valued": fact.single_valued,
            "source_episode": episode["id"],
            "path": episode["path"],
            "line": fact.line,
            "evidence": fact.evidence,
            "rule": fact.rule,
            "confidence": fact.confidence,
            "said_at": ts,
        }
    for eid, row in entities.items():
        stored = existing_entities.get(eid)
        if not stored:  # a new entity takes its most frequent type; a stored one keeps its own
            row["type"] = types[eid].most_common(1)[0][0]
    return entities, list(relations.values())
