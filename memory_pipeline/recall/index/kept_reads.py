"""A small tenant's rows of a table, kept as read at one version of the table.

``recall.sources.TenantCache.read_tenant`` keeps a read of fewer than ``persist_min_rows`` rows
in the tenant's folder of recall's persisted indices (``files.py``), with the version stamp of the
table it was read at (``store.lance_files.version_stamp``). A new process that finds the table at
that version reads the file back instead of LanceDB, whose import alone costs a one-shot command
1.5-2.5 s of CPU. Each set of columns has its own file: the commands that show typed memories read
every column, recall fewer, and neither displaces the other.

``read_tenants`` is that read for the commands that show rows (typed memories, episodes, the
knowledge graph, supersession records).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from memory_pipeline.store.tables import TableSpec

if TYPE_CHECKING:
    import polars as pl

log = logging.getLogger(__name__)

KEPT = "rows_at_version"


def kept_path(tenant_dir: Path, columns: list[str]) -> Path:
    digest = hashlib.blake2b("\x1f".join(columns).encode(), digest_size=6).hexdigest()
    return tenant_dir / f"{KEPT}.{digest}.arrow"


def kept_read(tenant_dir: Path, stamp: list[int] | None, columns: list[str]) -> pa.Table | None:
    """The tenant's ``columns`` as ``keep_read`` kept them, if kept at the table version ``stamp``
    (the table has not changed since, so neither have they); else None."""
    if stamp is None:
        return None
    try:
        with pa.memory_map(str(kept_path(tenant_dir, columns)), "r") as source:
            reader = pa.ipc.open_file(source)
            if json.loads(reader.schema.metadata[b"read_at"]) != {"stamp": stamp, "columns": columns}:
                return None
            table = reader.read_all()
        return table.replace_schema_metadata(None)
    except (OSError, KeyError, ValueError, TypeError, pa.ArrowException):
        return None


def keep_read(tenant_dir: Path, stamp: list[int] | None, columns: list[str], table: pa.Table) -> None:
    """Keep the tenant's ``columns`` as read at the table version ``stamp`` (replacing the last
    read of them), written aside and renamed into place; a failure costs the next reader its time."""
    if stamp is None:
        return
    meta = {b"read_at": json.dumps({"stamp": stamp, "columns": columns}).encode()}
    tmp = tenant_dir / f".kept.{uuid.uuid4().hex}.tmp"
    try:
        tenant_dir.mkdir(parents=True, exist_ok=True)
        table = table.replace_schema_metadata(meta)
        with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        os.replace(tmp, kept_path(tenant_dir, columns))
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        log.info("rows of %s not kept (%s): read from the table next time", tenant_dir.name, exc)


def read_tenants(uri: str, spec: TableSpec, tenants: str | list[str], columns: list[str] | None = None) -> pl.DataFrame:
    """The rows of ``tenants`` in table ``spec`` (``columns``: all but the vector by default), read
    as recall reads a tenant (``TenantCache.read_tenant``): kept beside its indices with the
    table's version, so that a new process reads them back without LanceDB until the table moves.
    A column the stored table lacks (written before a migration added it) reads as nulls, and a
    missing table as no rows."""
    import polars as pl

    from memory_pipeline.recall.sources import tenant_cache  # which keeps its reads here

    tenants = [tenants] if isinstance(tenants, str) else list(tenants)
    columns = list(columns or [c for c in spec.names if c != "vector"])
    schema = pa.schema([spec.schema(1).field(c) for c in columns])
    cache = tenant_cache(uri)

    def complete(part: pa.Table) -> pa.Table:
        for field in schema:
            if field.name not in part.schema.names:
                part = part.append_column(field, pa.nulls(part.num_rows, field.type))
        return part.select(columns)

    parts = []
    if spec.name in cache.table_names():
        parts = [complete(cache.read_tenant(spec.name, tenant, columns)) for tenant in dict.fromkeys(tenants)]
    table = pa.concat_tables(parts, promote_options="permissive") if parts else schema.empty_table()
    return pl.from_arrow(table)
