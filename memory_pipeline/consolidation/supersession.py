"""The supersession step of consolidation: decide a tenant's supersession records from all of its
statements and store exactly those (the ``supersessions`` table, ``timeline.records``).

The relations of the knowledge graph end by the same records (``timeline.relation_ends``), and
dreamed lines restating a replaced statement are marked. A run whose statements, relations and
settings are those the stored records were decided from (``consolidation_inputs``, step
``supersession``) keeps them without deciding again.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import polars as pl

from memory_pipeline.consolidation.store import ConsolidationStore
from memory_pipeline.episodes.dreaming import mark_replaced, memory_dir
from memory_pipeline.llm.client import LLMClient
from memory_pipeline.sources.workspace import DERIVED_DIR
from memory_pipeline.tenancy import Tenant, tenant_tz
from memory_pipeline.text.statements import MEMORY, TURN, Statement, load_nlp, parsed_words
from memory_pipeline.timeline import relation_ends
from memory_pipeline.timeline.parse_cache import StatementCache, pipeline_identity
from memory_pipeline.timeline.records import SupersessionStore, inherited_records, record_row
from memory_pipeline.timeline.statements import tenant_statements
from memory_pipeline.timeline.supersede import EXTRACTIVE, LLM, RULES_VERSION, detect

SUPERSESSION_STEP = "supersession"


@dataclass
class SupersessionReport:
    tenant: str
    statements: int = 0
    records: list[dict] = field(default_factory=list)
    added: int = 0
    removed: int = 0
    decided_by: dict[str, int] = field(default_factory=dict)
    relations_changed: list[dict] = field(default_factory=list)  # relations whose valid_to moved
    seconds: float = 0.0
    dreamed_marked: int = 0  # dreamed files whose lines were marked (or unmarked) as superseded
    parsed: int = 0  # texts parsed by spaCy in this run; the others were parsed by an earlier one
    embedded: int = 0  # claims embedded in this run
    unchanged: bool = False  # decided before from the same statements and relations: kept as stored


def inputs_digest(statements: list[Statement], relations: list[dict], settings: tuple[str, ...]) -> str:
    """What the tenant's records are decided from: every statement (where, what, when, by whom,
    about whom), every relation but the end the records give it, and ``settings`` (the rules'
    version, the parser, the embedder, the time zone, the deciding path)."""
    digest = hashlib.sha256(repr(settings).encode())
    for s in statements:
        digest.update(repr((s.ref, s.kind, s.text, s.said_at.isoformat(), s.speaker, s.path, s.line, s.by_day,
                            s.undated, s.subject)).encode("utf-8", "surrogateescape"))
    for row in sorted(relations, key=lambda r: r["id"]):
        digest.update(repr(sorted((k, v) for k, v in row.items() if k != "valid_to")).encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def records_digest(rows: pl.DataFrame) -> str:
    """The stored records, as far as a reader sees them: which statement replaced which, when, by whom."""
    keys = sorted(zip(*(rows[c].cast(pl.Utf8).to_list() for c in ("id", "new_ref", "new_said_at", "decided_by")),
                      strict=True)) if rows.height else []
    return hashlib.sha256(repr(keys).encode()).hexdigest()


def mark_dreamed(root: str | Path, tenant: Tenant, records: list[dict]) -> int:
    """Mark, in the tenant's dreamed documents, the lines restating a replaced statement; returns
    how many documents changed."""
    replaced = {r["old_ref"]: f"{r['new_said_at']:%Y-%m-%d}" for r in records if "#L" in r["old_ref"]}
    folder = memory_dir(Path(root), tenant) / DERIVED_DIR / "dreaming"
    return sum(mark_replaced(f, replaced) for f in sorted(folder.glob("*.md")))


def supersede_tenant(
    root: str | Path,
    uri: str | Path,
    tenant: Tenant,
    embedder,
    now: datetime,
    nlp=None,
    llm: LLMClient | None = None,
) -> SupersessionReport:
    """Detect the tenant's superseded statements and store exactly those records.

    A record that still holds keeps its ``decided_at``, so a rerun writes the same rows. Every
    statement is compared with every other when any changed; only the parses and vectors of texts
    an earlier run saw are read back (``parse_cache``) instead of computed again. With nothing
    changed since the stored records were decided (``inputs_digest``), they stand as they are.
    """
    started = time.perf_counter()
    report = SupersessionReport(tenant.key)
    consolidation = ConsolidationStore(uri, embedder.dim)
    memories = consolidation.typed_memory_rows(tenant.key)
    statements = tenant_statements(root, tenant, memories)
    report.statements = len(statements)
    nlp = nlp or load_nlp()
    store = SupersessionStore(uri)
    existing = store.rows(tenant.key)
    tz = tenant_tz(root, tenant)
    judge = f"llm:{llm.model}" if llm is not None and llm.available else EXTRACTIVE
    settings = (RULES_VERSION, pipeline_identity(nlp), f"{embedder.name}:{embedder.dim}", str(tz), judge)
    inputs = inputs_digest(statements, relation_ends.tenant_relations(consolidation, tenant.key), settings)
    if consolidation.built_from(tenant.key, SUPERSESSION_STEP).get(tenant.key) == f"{inputs}:{records_digest(existing)}":
        report.records = list(existing.iter_rows(named=True))
        report.decided_by = dict(Counter(r["decided_by"] for r in report.records if r["old_kind"] != relation_ends.RELATION))
        report.relations_changed = relation_ends.project(str(uri), tenant.key, report.records)
        report.dreamed_marked = mark_dreamed(root, tenant, report.records)  # a document dreamed since
        report.unchanged, report.seconds = True, time.perf_counter() - started
        return report
    # A typed memory's words are parsed on every run, never stored (see parse_cache).
    private = "\x00".join(s.text for s in statements if s.kind == MEMORY)
    cache = StatementCache(str(uri), tenant.key, nlp, embedder, lambda text: text not in private)
    pairs = detect(statements, cache.parser, cache.embedder, llm)
    before = {r["id"]: r for r in existing.iter_rows(named=True)}
    rows = []
    for pair in pairs:
        rows.append(record_row(tenant.key, pair, now))
        report.decided_by[pair.decided_by] = report.decided_by.get(pair.decided_by, 0) + 1
    rows += inherited_records(tenant.key, pairs, statements, now)
    for row in rows:
        old = before.get(row["id"])
        if old and old["new_ref"] == row["new_ref"] and old["decided_by"] == row["decided_by"]:
            row["decided_at"] = old["decided_at"]
    # The graph's relations end by the same record (timeline/relation_ends.py): written here, copied to valid_to.
    rows += relation_ends.decide(str(uri), tenant.key, pairs, cache.parser, cache.embedder, tz, now)
    # The other steps' parses of the turns' words (``ParseStore.parser``) stay while the turns do.
    cache.parser.retain(parsed_words(s.text) for s in statements if s.kind == TURN)
    cache.save()
    report.parsed, report.embedded = cache.parser.parsed, cache.embedder.embedded
    report.added, report.removed = store.replace_tenant(tenant.key, rows, existing)
    report.relations_changed = relation_ends.project(str(uri), tenant.key, rows)
    report.dreamed_marked = mark_dreamed(root, tenant, rows)
    report.records = rows
    if judge == EXTRACTIVE or all(p.decided_by == LLM for p in pairs):  # an endpoint that failed is asked again
        consolidation.record_built(tenant.key, SUPERSESSION_STEP, {tenant.key: f"{inputs}:{records_digest(store.rows(tenant.key))}"}, now)
    else:
        consolidation.forget_built(tenant.key, SUPERSESSION_STEP, [tenant.key])
    report.seconds = time.perf_counter() - started
    return report
