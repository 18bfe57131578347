"""Who said what, and when: a tenant's statements as supersession reads them.

A statement is one transcript turn (any role), one bullet or paragraph of a note, or one typed
memory. It carries where it is (``ref``: ``path#Lline`` for turns and note lines, the way typed
memories cite their source, or ``facts/<id>`` for a typed memory), who said it (the turn's
speaker; a note has none), its text (secrets scrubbed, as everywhere else; a turn without its code
blocks and attachments, as consolidation reads it) and when it was said
or written: the turn's time, a dated note's day, else the file's time. A typed memory extracted
from a turn or a note was said when its source was, by its source's speaker; one stored through
a tool, when it says it happened or was stored. Typed memories are statements of their own, so
a turn of several sentences retires only the memories whose sentence changed. What the pipeline
wrote itself (dreamed files under ``_system/``) restates these statements and is not read.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from memory_pipeline.config import get_settings
from memory_pipeline.sources.transcripts import read_transcript
from memory_pipeline.sources.workspace import KIND_MEMORY, KIND_SESSIONS, is_derived, read_text_file, scan_workspace
from memory_pipeline.tenancy import Tenant
from memory_pipeline.text.turns import Transcript
from memory_pipeline.text.memory_types import markdown_passages
from memory_pipeline.text.scrub import scrub_secrets
from memory_pipeline.text.statements import ASSISTANT_ROLES, MEMORY, NOTE, TURN, Statement, clean_text



def tenant_statements(root: str | Path, tenant: Tenant, memories: pl.DataFrame | None = None) -> list[Statement]:
    """Every statement of the tenant's transcripts, notes and live typed memories, oldest first."""
    root = Path(root)
    found: list[Statement] = []
    scan = scan_workspace(root, only=[tenant])
    for file in scan.files.get(tenant, []):
        if file.kind not in (KIND_MEMORY, KIND_SESSIONS) or is_derived(file.path):
            continue  # the pipeline's own documents (dreamed files) restate statements read here
        if file.kind == KIND_SESSIONS:
            transcript = read_transcript(root / file.path)
            if not isinstance(transcript, str):  # else the L0 index records why; nothing to compare
                found += _turns(transcript, file.path, tenant)
            continue
        read = read_text_file(root / file.path, get_settings().max_file_bytes)
        if read.text is not None:  # else the L0 index records why; nothing to compare here
            written = datetime.fromtimestamp(file.mtime_ns / 1e9, tz=UTC)
            try:
                # A user's own notes are about that user ("Lives in Lisbon"); agent-wide ones, anyone.
                found += _note_lines(read.text, file.path, written, None if tenant.is_global else tenant.user_id)
            except ValueError:
                continue  # a note named like no date (memory/2026-13-45.md): typed memories report it
    if memories is not None and memories.height:
        found += _memories(memories, {s.ref: s for s in found})
    return sorted(found, key=lambda s: s.order)


def _turns(transcript: Transcript, path: str, tenant: Tenant) -> list[Statement]:
    out = []
    for turn in transcript.turns:
        if turn.ts is None or not turn.content.strip():
            continue
        role = turn.role.strip()
        if role.lower() == "user":
            speaker = tenant.user_id
        elif role.lower() in ASSISTANT_ROLES:
            speaker = None
        else:
            speaker = role  # a named speaker of a multi-party transcript
        # Code and attachments ("[shares a photo of ...]") state no fact of the speaker's.
        content = clean_text(turn.content)  # scrubbed by parse_transcript
        if not content:
            continue
        out.append(Statement(f"{path}#L{turn.line}", TURN, content, turn.ts, speaker, path, turn.line))
    return out


def _note_lines(text: str, path: str, written: datetime, about: str | None) -> list[Statement]:
    out = []
    for passage in markdown_passages(scrub_secrets(text).text, path, UTC, written):
        line = int(passage.source_ref.rsplit("#L", 1)[1])
        out.append(Statement(passage.source_ref, NOTE, passage.text, passage.said_at, None, path, line,
                             by_day=passage.dated, undated=not passage.dated, subject=about, task=passage.task))
    return out


def _memories(memories: pl.DataFrame, sources: dict[str, Statement]) -> list[Statement]:
    out = []
    for row in memories.iter_rows(named=True):
        source = sources.get(row["source_ref"] or "") if row["source"] != "live" else None
        ref = f"facts/{row['id']}"
        if source is None:
            out.append(Statement(ref, MEMORY, row["content"], row["occurred_at"] or row["created_at"], None, ref, 1))
        else:
            out.append(Statement(ref, MEMORY, row["content"], source.said_at, source.speaker, source.path,
                                 source.line, by_day=source.by_day, undated=source.undated, subject=source.subject))
    return out
