"""Proves: typed-memory extraction isolates a bad file, and ``max_age_days`` limits what is read,
never what is kept; a dreamed document (the pipeline's own, under ``_system/``) is never read as
statements, and what an earlier extraction took from one is removed.

A note named ``memory/2026-13-45.md`` is skipped with its reason while the tenant's other files
are extracted. A later run limited to the last days reads only what was written in that window
and keeps every memory that older files and older passages gave.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

from memory_pipeline.embedding import make_embedder
from memory_pipeline.memories.pipeline import ingest_tenant
from memory_pipeline.memories.operations import TypedMemories
from memory_pipeline.tenancy import Tenant

CAROL = Tenant("research-assistant", "carol")


def test_a_badly_named_note_is_skipped_and_the_rest_extracted(sample_root, lance_uri):
    notes = sample_root / "research-assistant" / "users" / "carol" / "memory"
    (notes / "2026-13-45.md").write_text("- I prefer tea over coffee in the mornings with Dana.\n")
    typed = TypedMemories.open(lance_uri, make_embedder("hash"))
    report = ingest_tenant(typed, sample_root, CAROL)
    assert report.skipped == [(
        "research-assistant/users/carol/memory/2026-13-45.md",
        "2026-13-45 is not a date (a dated note is memory/YYYY-MM-DD.md)",
    )]
    assert report.files_extracted == report.files_seen - 1 == 5
    assert report.memories_written > 10


def test_max_age_reads_the_window_and_keeps_older_memories(sample_root, lance_uri):
    typed = TypedMemories.open(lance_uri, make_embedder("hash"))
    now = datetime(2026, 11, 22, tzinfo=UTC)
    full = ingest_tenant(typed, sample_root, CAROL, now=now)
    before = set(typed.store.memory_rows(CAROL.key)["id"].to_list())
    assert full.memories_written == len(before) > 10
    # Every file but one was written long ago; the recent one is re-read with a 12-day window.
    old = (now - timedelta(days=60)).timestamp()
    files = [p for p in (sample_root / "research-assistant").rglob("*") if p.is_file() and "carol" in p.as_posix()]
    assert files
    for path in files:
        os.utime(path, (old, old))
    recent = sample_root / "research-assistant" / "users" / "carol" / "memory" / "2026-11-10.md"
    recent.write_text(recent.read_text() + "\n- We decided to move the weekly review to Thursday.\n")
    windowed = ingest_tenant(typed, sample_root, CAROL, max_age_days=12, now=now)
    assert (windowed.files_older, windowed.files_extracted) == (len(files) - 1, 1)
    after = set(typed.store.memory_rows(CAROL.key)["id"].to_list())
    assert before <= after, "a limited run forgot memories it did not read"
    assert windowed.memories_removed == 0


def test_a_dreamed_document_is_not_extracted_again(sample_root, lance_uri):
    typed = TypedMemories.open(lance_uri, make_embedder("hash"))
    before = ingest_tenant(typed, sample_root, CAROL)
    ids = set(typed.store.memory_rows(CAROL.key)["id"].to_list())
    dreamed = sample_root / "research-assistant/users/carol/memory/_system/dreaming/20261112-consolidated.md"
    dreamed.parent.mkdir(parents=True)
    dreamed.write_text(
        "<!-- memory_pipeline:dreaming -->\n## Key decisions\n\n"
        "- Carol, 2026-11-10: Carol decided to take the staff writer job. [cm02 · research-assistant/sessions/carol/"
        "sess-20261110-cm02.jsonl#L8]\n"
    )
    again = ingest_tenant(typed, sample_root, CAROL)
    assert (again.files_seen, again.files_extracted, again.memories_written) == (before.files_seen, 0, 0)
    assert set(typed.store.memory_rows(CAROL.key)["id"].to_list()) == ids
    # A store that had read the dreamed file before loses what it took from it.
    typed.store.upsert_manifest([{
        "id": f"{CAROL.key}|{dreamed.relative_to(sample_root).as_posix()}", "tenant": CAROL.key,
        "path": dreamed.relative_to(sample_root).as_posix(), "content_hash": "x", "memory_ids": ["m_dreamed"],
        "options": "", "extracted_at": datetime(2026, 11, 12, tzinfo=UTC),
    }])
    typed.store.upsert_memories([typed.row(CAROL, "decision", "Carol decided to take the staff writer job.",
                                           source="markdown", source_ref=f"{dreamed.relative_to(sample_root).as_posix()}#L4")
                                 | {"id": "m_dreamed"}])
    ingest_tenant(typed, sample_root, CAROL)
    assert set(typed.store.memory_rows(CAROL.key)["id"].to_list()) == ids
