"""When a relation of the knowledge graph stops holding: a supersession record, like a statement's.

Consolidation decides it and writes it to the ``supersessions`` table (``timeline.records``)
as a record whose ``old_ref`` is ``relations/<id>``. A relation ends in one of two ways:
- **a later relation replaces it**: a single-valued relation (lives_in, works_at, manager, ...)
  ends when a later one of the same subject and predicate naming another object starts (its
  ``valid_from``: "from 1 December my manager is Tomás" ends Dana on 1 December). The record names
  that relation (``relations/<id>``), decided by this rule (extractive);
- **a later statement replaces its sentence**: a state's relation (not a deed) whose turn is
  superseded in the record, when the supersession rules, run again on the relation's own sentence against that
  successor, agree (a turn "I live in Boston. I work at Acme." replaced by "our flat is in Denver
  now" ends the residence, not the job). It ends when the successor starts holding (the later
  date it names, else when it was said); the record names the successor and who decided it (the
  statement record's ``decided_by``: extractive or llm).
The earlier of the two ends it, never before it started (a relation replaced before it began
never held). A relation's record keeps its end in ``new_said_at``.

The relation's stored ``valid_to`` is a copy of its record's date, written by the same step that
writes the records (``project``) and checked against them (``consolidation.checks``): graph search,
MCP tools, bulletins, dreaming and run metadata read the rows and recompute nothing. Records are
recomputed from the tenant's relations and statements on every consolidation, so reruns and
backfills in any order give the same rows; a forgotten memory that had ended a relation lets it
stand again (``refresh`` after ``SupersessionStore.release``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from memory_pipeline.knowledge.graph import normalize_name, starts
from memory_pipeline.knowledge.validity import utc
from memory_pipeline.store.base import LanceBase, sql_in, sql_str, stable_id
from memory_pipeline.store.tables import RELATIONS, SUPERSESSIONS
from memory_pipeline.text.statements import Statement
from memory_pipeline.timeline.supersede import EXTRACTIVE, Supersession, detect

STATE_RULES = frozenset({"role", "residence", "employer", "preference"})
"""Rules whose relations state something that holds until changed (``knowledge.relations``)."""
RELATION = "relation"
"""``old_kind`` of a relation's record, and ``new_kind`` when a later relation replaced it."""
_PREFIX = "relations/"


def relation_ref(relation_id: str) -> str:
    return f"{_PREFIX}{relation_id}"


def source_ref(relation: dict) -> str:
    """The statement a relation was read from, as supersession names it (``path#Lline``)."""
    return f"{relation['path']}#L{relation['line']}"


@dataclass(frozen=True)
class End:
    """What ended a relation, and when."""

    at: datetime
    new_ref: str
    new_kind: str
    score: float
    changed: tuple[str, ...]
    cues: tuple[str, ...]
    decided_by: str

    @classmethod
    def from_record(cls, row: dict) -> "End":
        return cls(row["new_said_at"], row["new_ref"], row["new_kind"], row["score"], tuple(row["changed"] or ()),
                   tuple(row["cues"] or ()), row["decided_by"])


def _object_key(row: dict) -> str:
    return row.get("object_id") or normalize_name(row["object"])


def replaced_by_relations(relations: Sequence[dict]) -> dict[str, End]:
    """Single-valued relations a later one of another object replaced, by id: per (subject,
    predicate) in the order they start, the first later one naming a different object."""
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for row in relations:
        if row.get("single_valued"):
            groups[(row["subject_id"], row["predicate"])].append(row)
    floor = datetime.min.replace(tzinfo=UTC)
    ends: dict[str, End] = {}
    for items in groups.values():
        items.sort(key=lambda r: (utc(r["valid_from"]) if r["valid_from"] else floor, r["id"]))
        for i, row in enumerate(items):
            later = next((x for x in items[i + 1:] if x["valid_from"] is not None and _object_key(x) != _object_key(row)), None)
            if later is not None:
                ends[row["id"]] = End(utc(later["valid_from"]), relation_ref(later["id"]), RELATION,
                                      round(float(later["confidence"]), 4), ("object",), (), EXTRACTIVE)
    return ends


def replaced_by_statements(relations: Sequence[dict], pairs: Iterable[Supersession], nlp, embedder, tz) -> dict[str, End]:
    """Relations whose sentence a later statement replaced, by id.

    A superseded turn may say several things; the pair is decided again on each relation's own
    sentence (the same rules, without the endpoint: its decision on the turn is the one recorded).
    Only a state ends this way (where one lives or works, a role, a preference, any single-valued
    relation): a deed ("joined a mentorship program") happened, whatever is said later.
    """
    by_source: dict[str, list[dict]] = defaultdict(list)
    for row in relations:
        if row.get("single_valued") or row.get("rule") in STATE_RULES:
            by_source[source_ref(row)].append(row)
    ends: dict[str, End] = {}
    for pair in pairs:
        rows = by_source.get(pair.old.ref)
        if not rows:
            continue
        old = pair.old
        sentences = [
            Statement(relation_ref(r["id"]), RELATION, r["evidence"], old.said_at, old.speaker, old.path, old.line,
                      by_day=old.by_day, undated=old.undated)
            for r in rows
        ]
        at = utc(starts(pair.new.text, pair.new.said_at, tz))
        for found in detect([*sentences, pair.new], nlp, embedder):
            if found.new.ref == pair.new.ref and found.old.ref.startswith(_PREFIX):
                ends[found.old.ref[len(_PREFIX):]] = End(at, pair.new.ref, pair.new.kind, pair.score, pair.changed,
                                                         pair.cues, pair.decided_by)
    return ends


def relation_records(
    tenant: str, relations: Sequence[dict], by_statement: dict[str, End], before: dict[str, dict], now: datetime
) -> list[dict]:
    """The records of the tenant's relations that ended; a record that still holds keeps its
    ``decided_at``, so a rerun writes the same rows."""
    by_relation = replaced_by_relations(relations)
    rows = []
    for rel in relations:
        options = [e for e in (by_relation.get(rel["id"]), by_statement.get(rel["id"])) if e is not None]
        if not options:
            continue
        end = min(options, key=lambda e: (utc(e.at), e.new_kind != RELATION))  # a tie: the graph's own rule
        at = utc(end.at)
        if rel["valid_from"] is not None and at < utc(rel["valid_from"]):
            at = utc(rel["valid_from"])
        ref = relation_ref(rel["id"])
        row = {
            "id": stable_id("supersession", tenant, ref),
            "tenant": tenant,
            "old_ref": ref,
            "old_kind": RELATION,
            "old_said_at": rel.get("said_at") or rel["valid_from"] or at,
            "new_ref": end.new_ref,
            "new_kind": end.new_kind,
            "new_said_at": at,
            "attribute": rel["predicate"],
            "changed": list(end.changed),
            "cues": list(end.cues),
            "score": end.score,
            "decided_by": end.decided_by,
            "decided_at": now,
        }
        old = before.get(row["id"])
        if old and all(old[k] == row[k] for k in ("new_ref", "decided_by")) and utc(old["new_said_at"]) == at:
            row["decided_at"] = old["decided_at"]
        rows.append(row)
    return rows


def tenant_relations(store: LanceBase, tenant: str) -> list[dict]:
    if not store.has(RELATIONS):
        return []
    return list(store.read(RELATIONS, f"tenant = {sql_str(tenant)}").iter_rows(named=True))


def records_of(store: LanceBase, tenant: str) -> dict[str, dict]:
    """The tenant's stored relation records, by id."""
    rows = store.read(SUPERSESSIONS, f"tenant = {sql_str(tenant)} AND old_kind = {sql_str(RELATION)}")
    return {r["id"]: r for r in rows.iter_rows(named=True)}


def decide(uri: str, tenant: str, pairs: Sequence[Supersession], nlp, embedder, tz, now: datetime) -> list[dict]:
    """The records of the tenant's relations that ended, from the statement decisions just made
    (``supersede_tenant``, which stores them with the statements' records)."""
    store = LanceBase(uri)
    relations = tenant_relations(store, tenant)
    if not relations:
        return []
    by_statement = replaced_by_statements(relations, pairs, nlp, embedder, tz)
    return relation_records(tenant, relations, by_statement, records_of(store, tenant), now)


def project(uri: str, tenant: str, records: Iterable[dict]) -> list[dict]:
    """Make each relation's ``valid_to`` its record's date (none without a record); returns the
    relations whose ``valid_to`` changed, with the new value."""
    store = LanceBase(uri)
    ends = {r["old_ref"][len(_PREFIX):]: utc(r["new_said_at"]) for r in records if r["old_ref"].startswith(_PREFIX)}
    changed = []
    for rel in tenant_relations(store, tenant):
        end = ends.get(rel["id"])
        if (utc(rel["valid_to"]) if rel["valid_to"] is not None else None) != end:
            changed.append({**rel, "valid_to": end})
    store.upsert(RELATIONS, changed)
    return changed


def refresh(uri: str, tenant: str, now: datetime) -> list[dict]:
    """Recompute the tenant's relation records from its relations and the stored statement
    decisions (after entities merged or a memory was forgotten), store them and project them;
    returns the relations whose ``valid_to`` changed."""
    store = LanceBase(uri)
    relations = tenant_relations(store, tenant)
    before = records_of(store, tenant) if store.has(SUPERSESSIONS) else {}
    if not relations and not before:
        return []
    ids = {r["id"] for r in relations}
    # A statement's end kept only where it won: entities merging only brings a relation's graph
    # end earlier, and the next consolidation decides both again.
    by_statement = {
        r["old_ref"][len(_PREFIX):]: End.from_record(r) for r in before.values()
        if r["new_kind"] != RELATION and r["old_ref"][len(_PREFIX):] in ids
    }
    records = relation_records(tenant, relations, by_statement, before, now)
    stale = sorted(set(before) - {r["id"] for r in records})
    if records:
        store.upsert(SUPERSESSIONS, records)
    if stale:
        store.delete(SUPERSESSIONS, f"tenant = {sql_str(tenant)} AND {sql_in('id', stale)}")
    return project(uri, tenant, records)
