"""The L0 index as plain functions: find changed files, chunk them, embed, write.

The Dagster assets in ``assets/l0_index.py`` are thin wrappers over these, so tests and
benchmarks can run every step without Dagster.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

from memory_pipeline.config import Settings
from memory_pipeline.embedding import Embedder
from memory_pipeline import progress
from memory_pipeline.faults import fault_point
from memory_pipeline.l0.store import ChunkIndex
from memory_pipeline.sources.transcripts import parse_transcript
from memory_pipeline.sources.workspace import (
    KIND_OTHER,
    KIND_SESSIONS,
    WorkspaceFile,
    file_date,
    read_text_file,
    scan_workspace,
)
from memory_pipeline.store.tables import CHUNKS, FILES
from memory_pipeline.tenancy import Tenant
from memory_pipeline.text.chunking import ChunkSpan, chunk_markdown, chunk_transcript
from memory_pipeline.text.scrub import SCRUB_VERSION, scrub_secrets

log = logging.getLogger(__name__)


CHUNK_COLUMNS = {
    "id": pl.Utf8,
    "tenant": pl.Utf8,
    "agent_id": pl.Utf8,
    "user_id": pl.Utf8,
    "path": pl.Utf8,
    "source": pl.Utf8,
    "start_line": pl.Int32,
    "end_line": pl.Int32,
    "heading": pl.Utf8,
    "turn_ids": pl.List(pl.Utf8),
    "text": pl.Utf8,
    "text_hash": pl.Utf8,
    "file_hash": pl.Utf8,
    "file_date": pl.Date,
    "ts_start": pl.Datetime("us", "UTC"),
}


CHUNKER_VERSION = 2
"""Bump when chunking or turn formatting changes what a file's chunks are."""


def index_signature(model: str, settings: Settings) -> str:
    """What a file's chunks depend on besides its bytes: the model, the chunking settings and
    the scrubber's version.

    The manifest stores it per file; a file is only unchanged if its hash and this signature
    both match, so changing the model or a chunk size re-indexes every file on the next run.
    """
    parts = (
        CHUNKER_VERSION,
        SCRUB_VERSION,
        settings.chunk_target_chars,
        settings.chunk_max_chars,
        settings.chunk_overlap_chars,
        settings.session_window_turns,
        settings.session_window_stride,
    )
    return f"{model}#" + hashlib.sha256(repr(parts).encode()).hexdigest()[:12]


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def chunk_id(tenant: str, path: str, span: ChunkSpan, t_hash: str) -> str:
    key = f"{tenant}|{path}|{span.start_line}|{span.end_line}|{t_hash}"
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:32]


@dataclass
class TenantChunks:
    """What one tenant's run must change: new chunk rows, manifest rows and paths to replace."""

    tenant: str
    chunks: pl.DataFrame  # CHUNK_COLUMNS
    files: pa.Table  # FILES.schema() rows for every file whose manifest entry changes
    replaced_paths: list[str]  # changed and deleted files: their old chunks go
    deleted_paths: list[str]
    stats: Counter = field(default_factory=Counter)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    secrets_redacted: Counter = field(default_factory=Counter)


def _empty_chunks() -> pl.DataFrame:
    return pl.DataFrame(schema=CHUNK_COLUMNS)


def _spans_for(wf: WorkspaceFile, text: str, settings: Settings, secrets: Counter):
    """Chunk one file's text; returns (spans, ts_start per span, malformed-line reasons)."""
    if wf.kind == KIND_SESSIONS:
        transcript = parse_transcript(text)  # scrubs every field it hands on
        secrets.update(transcript.secrets)
        spans = chunk_transcript(
            transcript,
            window_turns=settings.session_window_turns,
            stride=settings.session_window_stride,
            max_chars=settings.chunk_max_chars,
            overlap_chars=settings.chunk_overlap_chars,
        )
        by_line = {t.line: t.ts for t in transcript.turns}
        starts = [by_line.get(s.start_line) for s in spans]
        bad = [f"line {line}: {reason}" for line, reason in transcript.skipped]
        return spans, starts, bad
    # Read unscrubbed (an unchanged file is only hashed); scrubbed here, before it is chunked.
    scrubbed = scrub_secrets(text)
    secrets.update(scrubbed.counts)
    spans = chunk_markdown(
        scrubbed.text,
        target_chars=settings.chunk_target_chars,
        max_chars=settings.chunk_max_chars,
        overlap_chars=settings.chunk_overlap_chars,
    )
    return spans, [None] * len(spans), []


def prepare_tenant(
    store: ChunkIndex,
    root: Path,
    tenant: Tenant,
    settings: Settings,
    model: str,
    files: list[WorkspaceFile] | None = None,
) -> TenantChunks:
    """Compare the tenant's files with its manifest and chunk those that changed."""
    if files is None:
        scan = scan_workspace(root, only=[tenant])
        files = scan.files.get(tenant, [])
        skipped = list(scan.skipped)
    else:
        skipped = []
    signature = index_signature(model, settings)
    manifest = store.manifest(tenant.key)
    known = {row["path"]: row for row in manifest.iter_rows(named=True)}
    now = datetime.now(UTC)
    # Every listed skip is counted: a file the scan skipped (a symlink out of the tenant, a name
    # holding a secret) is a skipped file too.
    stats: Counter = Counter(files_seen=len(files), files_skipped=len(skipped))
    secrets: Counter = Counter()
    chunk_records: list[dict] = []
    file_rows: list[dict] = []
    replaced: list[str] = []

    for wf in files:
        progress.advance("files read", 1, len(files))
        previous = known.get(wf.path)
        if wf.kind == KIND_OTHER:
            stats["files_recorded_only"] += 1
            if previous is None or previous["size"] != wf.size or previous["mtime_ns"] != wf.mtime_ns:
                file_rows.append(_file_row(tenant, wf, "recorded", "not a Markdown memory file or transcript", None, None, 0, now))
            if previous is not None and previous["chunk_count"]:
                replaced.append(wf.path)
            continue
        read = read_text_file(root / wf.path, settings.max_file_bytes, scrub=False)
        if (
            previous is not None
            and read.content_hash is not None
            and previous["content_hash"] == read.content_hash
            and previous["model"] == signature
            and previous["status"] in ("indexed", "skipped")
        ):
            stats["files_unchanged"] += 1
            if previous["mtime_ns"] != wf.mtime_ns or previous["size"] != wf.size:
                file_rows.append({**previous, "size": wf.size, "mtime_ns": wf.mtime_ns})
            continue
        if read.text is None:
            stats["files_skipped"] += 1
            skipped.append((wf.path, read.reason))
            log.warning("skipping %s (tenant %s): %s", wf.path, tenant.key, read.reason)
            file_rows.append(_file_row(tenant, wf, "skipped", read.reason, read.content_hash, signature, 0, now))
            replaced.append(wf.path)
            continue
        try:
            spans, starts, bad_lines = _spans_for(wf, read.text, settings, secrets)
        except Exception as exc:  # one broken file never stops the tenant
            reason = scrub_secrets(f"could not be chunked: {type(exc).__name__}: {exc}").text
            stats["files_skipped"] += 1
            skipped.append((wf.path, reason))
            log.exception("skipping %s (tenant %s)", wf.path, tenant.key)
            file_rows.append(_file_row(tenant, wf, "skipped", reason, read.content_hash, signature, 0, now))
            replaced.append(wf.path)
            continue
        if bad_lines:
            stats["malformed_lines"] += len(bad_lines)
            skipped.extend((wf.path, f"{b} (line skipped)") for b in bad_lines)
            log.warning("%s (tenant %s): %d malformed line(s) skipped: %s", wf.path, tenant.key, len(bad_lines), "; ".join(bad_lines[:5]))
        stats["files_changed" if previous else "files_new"] += 1
        replaced.append(wf.path)
        fdate = file_date(wf.scope_path)
        source = "sessions" if wf.kind == KIND_SESSIONS else "memory"
        heading_ok = source == "memory"
        file_ids: set[str] = set()
        for span, ts in zip(spans, starts):
            t_hash = text_hash(span.text)
            cid = chunk_id(tenant.key, wf.path, span, t_hash)
            if cid in file_ids:
                # The same text at the same lines (pieces of one long repetitive line) is one row,
                # and the manifest counts rows, or the manifest check would fail on this file.
                continue
            file_ids.add(cid)
            chunk_records.append(
                {
                    "id": cid,
                    "tenant": tenant.key,
                    "agent_id": tenant.agent_id,
                    "user_id": tenant.user_id,
                    "path": wf.path,
                    "source": source,
                    "start_line": span.start_line,
                    "end_line": span.end_line,
                    "heading": " > ".join(span.heading_path) if heading_ok else None,
                    "turn_ids": list(span.turn_ids),
                    "text": span.text,
                    "text_hash": t_hash,
                    "file_hash": read.content_hash,
                    "file_date": fdate,
                    "ts_start": ts,
                }
            )
        reason = "empty file" if not spans else None
        file_rows.append(_file_row(tenant, wf, "indexed", reason, read.content_hash, signature, len(file_ids), now))

    seen = {wf.path for wf in files}
    deleted = sorted(p for p in known if p not in seen)
    stats["files_deleted"] = len(deleted)
    chunks = pl.DataFrame(chunk_records, schema=CHUNK_COLUMNS) if chunk_records else _empty_chunks()
    # A chunk repeated verbatim at the same lines would collide on id; keep one.
    chunks = chunks.unique(subset="id", keep="first", maintain_order=True)
    stats["chunks_prepared"] = chunks.height
    return TenantChunks(
        tenant=tenant.key,
        chunks=chunks,
        files=pa.Table.from_pylist(file_rows, schema=FILES.schema()),
        replaced_paths=sorted(set(replaced) | set(deleted)),
        deleted_paths=deleted,
        stats=stats,
        skipped=skipped,
        secrets_redacted=secrets,
    )


def _file_row(tenant, wf, status, reason, content_hash, signature, chunk_count, now) -> dict:
    return {
        "id": f"{tenant.key}|{wf.path}",
        "tenant": tenant.key,
        "path": wf.path,
        "kind": wf.kind,
        "status": status,
        "reason": reason,
        "content_hash": content_hash,
        "size": wf.size,
        "mtime_ns": wf.mtime_ns,
        "model": signature,  # the index signature: model and chunking settings
        "chunk_count": chunk_count,
        "indexed_at": now,
    }


EMBED_BLOCK = 2048
"""Texts embedded, and vectors held in memory, at once: bounds peak memory at any scale."""
WRITE_BATCH = 4096
"""Chunk rows per Arrow batch streamed into one LanceDB commit."""
LOOKUP_SLICE = 8192
"""Text hashes looked up in the embedding cache at once."""


@dataclass
class EmbeddingReport:
    """What the embedding step did; the vectors themselves are in the embedding cache."""

    model: str
    distinct_texts: int
    computed: int
    cache_hits: int
    embed_s: float
    cache_s: float


def embed_tenants(
    batches: list[TenantChunks], embedder: Embedder, store: ChunkIndex, block: int = EMBED_BLOCK
) -> EmbeddingReport:
    """Make sure every distinct chunk text of these tenants has a vector in the cache.

    Texts whose (model, text hash) is already cached are not embedded again, in any file or
    tenant. The rest are sorted by length (batches of similar lengths waste no padding) and
    embedded ``block`` at a time; each block goes into the cache before the next is computed,
    so no more than one block of vectors is ever held here, and a crash loses at most one block.
    The texts stay in the chunk frames: Python holds one block's texts and hashes at a time (a
    dict of every text by hash took 334 MB of Python objects on a 1M-chunk ingest).
    """
    started = time.perf_counter()
    frames = [b.chunks.select("text_hash", "text") for b in batches if b.chunks.height]
    if not frames:
        return EmbeddingReport(embedder.name, 0, 0, 0, 0.0, time.perf_counter() - started)
    chunks = pl.concat(frames, rechunk=False)  # the batches' columns, not copies
    keys = chunks.select(
        "text_hash",
        pl.col("text").str.len_chars().alias("chars"),
        pl.int_range(pl.len(), dtype=pl.UInt32).alias("row"),
    ).unique("text_hash", keep="first", maintain_order=True)
    found = []
    for start in range(0, keys.height, LOOKUP_SLICE):
        part = keys["text_hash"].slice(start, LOOKUP_SLICE)
        found.append(pl.Series("text_hash", sorted(store.cached_hashes(embedder.name, part.to_list())), pl.Utf8))
    missing = keys.filter(~pl.col("text_hash").is_in(pl.concat(found))).sort("chars", maintain_order=True)
    del found
    texts = chunks["text"]
    cache_s = time.perf_counter() - started
    embed_s = 0.0
    for start in range(0, missing.height, block):
        part = missing.slice(start, block)
        hashes = part["text_hash"].to_list()
        t0 = time.perf_counter()
        vectors = embedder.embed(texts.gather(part["row"]).to_list())
        embed_s += time.perf_counter() - t0
        t0 = time.perf_counter()
        store.put_cached_vectors(embedder.name, hashes, vectors)
        store.maintain_cache_index()  # by row count: keeps the next lookups by id indexed
        fault_point("after_embed_block")
        cache_s += time.perf_counter() - t0
        progress.advance("chunks embedded", len(hashes), missing.height)
    if missing.height:
        t0 = time.perf_counter()
        store.compact_cache()  # once per run: the blocks above left one small fragment each
        cache_s += time.perf_counter() - t0
    return EmbeddingReport(
        model=embedder.name,
        distinct_texts=keys.height,
        computed=missing.height,
        cache_hits=keys.height - missing.height,
        embed_s=embed_s,
        cache_s=cache_s,
    )


def _chunk_batches(store: ChunkIndex, chunks: pl.DataFrame, model: str, schema: pa.Schema):
    """Chunk rows with their cached vectors, as Arrow batches of WRITE_BATCH rows."""
    now = datetime.now(UTC)
    for start in range(0, chunks.height, WRITE_BATCH):
        part = chunks.slice(start, WRITE_BATCH)
        hashes = part["text_hash"].to_list()
        found = store.cached_vectors(model, hashes)
        absent = sorted(set(hashes) - set(found))
        if absent:
            raise RuntimeError(
                f"{len(absent)} chunk text(s) have no cached {model} vector (e.g. {absent[0]}); "
                "the embedding did not complete: run the L0 index again"
            )
        matrix = np.stack([found[h] for h in hashes]).astype(np.float32, copy=False)
        frame = part.with_columns(
            pl.Series("vector", matrix, dtype=pl.Array(pl.Float32, store.dim)),
            pl.lit(model).alias("model"),
            pl.lit(now).cast(pl.Datetime("us", "UTC")).alias("updated_at"),
        )
        fault_point("write_batch")  # inside the LanceDB commit, which is reading this stream
        yield from frame.select(schema.names).to_arrow().cast(schema).to_batches()


def write_tenant(store: ChunkIndex, prepared: TenantChunks, model: str) -> dict[str, int]:
    """Replace the chunks of every changed or deleted file in one commit, then the manifest.

    Rows are streamed into the commit batch by batch, each with vectors read from the cache, so
    a tenant of any size is written holding one batch of vectors at a time.
    """
    schema = CHUNKS.schema(store.dim)
    before = 0
    if prepared.replaced_paths:
        before = _count_paths(store, prepared.tenant, prepared.replaced_paths)
        fault_point("before_chunks_commit")
        store.replace_file_chunks(
            prepared.tenant,
            prepared.replaced_paths,
            lambda: pa.RecordBatchReader.from_batches(schema, _chunk_batches(store, prepared.chunks, model, schema)),
            empty=prepared.chunks.height == 0,
        )
        fault_point("after_chunks_commit")
    # The manifest is written after the chunks: a crash in between leaves files that look
    # changed, so the next run redoes them, and the upsert above makes that harmless.
    store.upsert_files(prepared.files)
    store.delete_files(prepared.tenant, prepared.deleted_paths)
    return {"chunks_written": prepared.chunks.height, "chunks_replaced_or_removed": before}


def _count_paths(store: ChunkIndex, tenant: str, paths: list[str]) -> int:
    from memory_pipeline.store.base import sql_in, sql_str

    table = store.chunks()
    return table.count_rows(f"tenant = {sql_str(tenant)} AND {sql_in('path', paths)}")
