"""Extracting one tenant's typed memories from its transcripts and Markdown, incrementally.

A manifest (``memory_sources``) records each file's content hash and the memories it produced.
An unchanged file is skipped; a changed file's memories are replaced by what it yields now; a
deleted file's memories go. Memories stored through a tool (source ``live``) are never touched,
and memories that were forgotten or skipped are not stored again.

A file that cannot be read or parsed (a note named ``memory/2026-13-45.md``) is skipped with its
reason and the others go on. ``max_age_days`` limits what is read, never what is kept: files not
written in that window are not read, passages older than it are not extracted, and the memories
they gave earlier stay.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memory_pipeline.text.memory_types import (
    EXTRACTOR_VERSION,
    Extracted,
    extract,
    markdown_passages,
    transcript_passages,
)
from memory_pipeline.memories.operations import TypedMemories
from memory_pipeline.memories.store import SOURCE_CHANGED, now_utc
from memory_pipeline.sources.transcripts import parse_transcript
from memory_pipeline.sources.workspace import KIND_MEMORY, KIND_SESSIONS, is_derived, read_text_file, scan_workspace
from memory_pipeline.store.base import sql_in
from memory_pipeline.store.tables import MEMORY_AUDIT, MEMORY_SOURCES
from memory_pipeline.tenancy import Tenant
from memory_pipeline.text.dates import tenant_timezone, zone
from memory_pipeline.text.scrub import SCRUB_VERSION, scrub_secrets
from memory_pipeline.text.statements import load_nlp
from memory_pipeline.timeline.parse_cache import ParseStore

SOURCE_KINDS = {"markdown": (KIND_MEMORY,), "transcript": (KIND_SESSIONS,), "all": (KIND_MEMORY, KIND_SESSIONS)}


@dataclass
class IngestReport:
    tenant: str
    timezone: str
    files_seen: int = 0
    files_extracted: int = 0
    files_unchanged: int = 0
    files_removed: int = 0
    files_older: int = 0
    memories_written: int = 0
    memories_removed: int = 0
    blocked: int = 0
    secrets_redacted: int = 0
    by_type: dict[str, int] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    preview: list[dict] = field(default_factory=list)


def ingest_tenant(
    typed: TypedMemories,
    root: str | Path,
    tenant: Tenant,
    *,
    source: str = "all",
    max_age_days: int | None = None,
    now: datetime | None = None,
    max_file_bytes: int = 8_000_000,
    actor: str = "typed_memories_ingest",
) -> IngestReport:
    """Extract typed memories from the tenant's changed files; returns what was done."""
    if source not in SOURCE_KINDS:
        raise ValueError(f"unknown source {source!r}: use markdown, transcript or all")
    now = now or now_utc()
    cutoff = now - timedelta(days=max_age_days) if max_age_days is not None else None
    # The scrubber's version: files extracted before it found what it finds now are extracted again.
    options = f"{EXTRACTOR_VERSION}|max_age={max_age_days}|scrubbed-{SCRUB_VERSION}"
    root = Path(root).resolve()
    # A dreamed document restates typed memories and turns: read again, it would make copies of
    # them that a later run then compares with their sources. What it gave before is removed.
    files = [
        f for f in scan_workspace(root, only=[tenant]).files.get(tenant, [])
        if f.kind in SOURCE_KINDS[source] and not is_derived(f.path)
    ]
    memory_files = [root / f.path for f in files if f.kind == KIND_MEMORY and f.scope_path.lower() == "memory.md"]
    tz_name = tenant_timezone(memory_files) or "UTC"
    tz = zone(tz_name)
    report = IngestReport(tenant.key, tz_name, files_seen=len(files))
    manifest = typed.store.manifest(tenant.key)
    blocked = typed.store.blocked_ids(tenant.key)

    todo: list[tuple[str, str, list]] = []  # (path, hash, passages)
    kept = ParseStore(typed.store.uri)
    turns_parser = None  # the tenant's kept parses, read once a transcript is to be read
    for f in files:
        if cutoff is not None and datetime.fromtimestamp(f.mtime_ns / 1e9, tz=UTC) < cutoff:
            report.files_older += 1  # outside the window: not read, and what it gave is kept
            continue
        read = read_text_file(root / f.path, max_file_bytes, scrub=False)  # only hashed if unchanged
        if read.text is None:
            report.skipped.append((f.path, read.reason or "unreadable"))
            continue
        known = manifest.get(f.path)
        if known and known["content_hash"] == read.content_hash and known.get("options") == options:
            report.files_unchanged += 1
            continue
        if f.kind == KIND_SESSIONS and turns_parser is None:
            turns_parser = kept.parser(tenant.key, load_nlp(), keep=True)
        try:
            passages, redacted = _passages(f, read.text, tz, tenant.user_id, turns_parser)
        except ValueError as exc:  # a bad file is skipped with its reason; the others go on
            report.skipped.append((f.path, str(exc)))
            continue
        report.secrets_redacted += redacted
        if cutoff is not None:
            passages = [p for p in passages if p.said_at >= cutoff or not p.dated]
        todo.append((f.path, read.content_hash, passages))

    extracted = extract([p for _, _, ps in todo for p in ps], tz) if todo else []
    if turns_parser is not None:
        kept.add(tenant.key, turns_parser)  # the turns' parses, for supersession and consolidation
    by_path: dict[str, list[Extracted]] = {}
    for item in extracted:
        by_path.setdefault(item.source_ref.split("#", 1)[0], []).append(item)

    rows: dict[str, dict] = {}
    manifest_rows = []
    for path, digest, _ in todo:
        ids = []
        for item in by_path.get(path, []):
            row = typed.row(tenant, **asdict(item))
            if row["id"] in blocked:
                report.blocked += 1
                continue
            ids.append(row["id"])
            rows.setdefault(row["id"], row)
        manifest_rows.append({
            "id": f"{tenant.key}|{path}", "tenant": tenant.key, "path": path, "content_hash": digest,
            "memory_ids": sorted(set(ids)), "options": options, "extracted_at": now,
        })
        report.files_extracted += 1

    # Memories a changed or deleted file no longer yields, unless another file still does.
    seen_paths = {f.path for f in files}
    gone_paths = [p for p in manifest if p not in seen_paths and _kind_of(p) in SOURCE_KINDS[source]]
    redone = {p for p, _, _ in todo}
    old_ids = {i for p in [*redone, *gone_paths] if p in manifest for i in (manifest[p]["memory_ids"] or [])}
    still = {i for p, m in manifest.items() if p not in redone and p not in gone_paths for i in (m["memory_ids"] or [])}
    stale = sorted(old_ids - set(rows) - still)
    kept_older: dict[str, set[str]] = {}
    if cutoff is not None and stale:
        # Passages before the window were not read again: what they gave stays, and the file's
        # manifest keeps naming it.
        old = typed.store.memory_rows(tenant.key, sql_in("id", stale))
        older = {r["id"] for r in old.iter_rows(named=True) if r["occurred_at"] is not None and r["occurred_at"] < cutoff}
        for p in redone:
            kept_older[p] = {i for i in (manifest.get(p, {}).get("memory_ids") or []) if i in older}
        stale = sorted(set(stale) - older)

    known_ids: set[str] = set()
    if rows:
        existing = typed.store.memory_rows(tenant.key, sql_in("id", list(rows)), vectors=True)
        known_ids = set(existing["id"].to_list()) if existing.height else set()
        for old in existing.iter_rows(named=True):
            row = rows[old["id"]]
            row["created_at"] = old["created_at"]
            if old["content_hash"] == row["content_hash"] and old["model"] == typed.embedder.name:
                row["vector"], row["model"] = old["vector"], old["model"]  # no need to embed again
        typed.embed_rows(list(rows.values()))
        typed.store.upsert_memories(list(rows.values()))
    if stale:
        live = typed.store.memory_rows(tenant.key, f"{sql_in('id', stale)} AND source = 'live'")
        stale = sorted(set(stale) - set(live["id"].to_list() if live.height else []))
        typed.store.delete_memories(tenant.key, stale)
    for row in manifest_rows:
        row["memory_ids"] = sorted(set(row["memory_ids"]) | kept_older.get(row["path"], set()))
    typed.store.upsert_manifest(manifest_rows)
    typed.store.delete_manifest(tenant.key, gone_paths)
    typed.store.ensure_fts_index()
    # A memory re-read from a changed file is the same row: only new memories are a store.
    audit = [
        {"tenant": tenant.key, "memory_id": mid, "op": "store", "memory_type": row["memory_type"],
         "fields": ["content"], "reason": f"extracted from {row['source_ref']}", "actor": actor}
        for mid, row in rows.items() if mid not in known_ids
    ]
    audit += [
        {"tenant": tenant.key, "memory_id": mid, "op": "forget", "memory_type": None,
         "fields": [SOURCE_CHANGED], "reason": "its source file changed or was deleted", "actor": actor}
        for mid in stale
    ]
    typed.store.append_audit(audit)
    typed.store.settle(MEMORY_AUDIT, MEMORY_SOURCES)  # the memories table was optimized above
    report.files_removed = len(gone_paths)
    report.memories_written = len(rows)
    report.memories_removed = len(stale)
    for row in rows.values():
        report.by_type[row["memory_type"]] = report.by_type.get(row["memory_type"], 0) + 1
    # Where each memory came from, not what it says: run metadata outlives a forgotten memory.
    report.preview = [
        {"type": r["memory_type"], "source_ref": r["source_ref"], "happens_at": r["happens_at"]}
        for r in list(rows.values())[:8]
    ]
    return report


def _passages(f, text: str, tz, user_id: str, nlp=None) -> tuple[list, int]:
    """The file's passages, its secrets scrubbed first (a memory must never hold one), and how
    many were redacted; ValueError for a file that cannot be read as what its name says. ``nlp``
    parses a transcript's turns."""
    if f.kind == KIND_SESSIONS:
        transcript = parse_transcript(text)  # scrubs every field it hands on
        return transcript_passages(list(transcript.turns), f.path, user_id, nlp), sum(transcript.secrets.values())
    written = datetime.fromtimestamp(f.mtime_ns / 1e9, tz=UTC)
    scrubbed = scrub_secrets(text)  # keeps every line where it was
    return markdown_passages(scrubbed.text, f.path, tz, written), sum(scrubbed.counts.values())


def _kind_of(path: str) -> str:
    return KIND_SESSIONS if "/sessions/" in path else KIND_MEMORY
