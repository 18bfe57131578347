"""One spec per LanceDB table: its name, columns, full-text column, indices and schema version.

Every module reads and writes a table through its spec (``store.base.LanceBase``), so a table's
name and shape are written down once, here. Columns are listed as ``name type`` with ``!`` for
NOT NULL; ``vec`` is a vector of the embedder's size, fixed per table, and ``floats`` a list of
any length. A change of columns bumps the table's ``version`` and adds the named ``Migration`` that brings a
table of the previous version to it; ``store.base.LanceBase`` applies the missing ones, in order,
the first time it opens the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

TIMESTAMP = pa.timestamp("us", tz="UTC")
_TYPES = {
    "str": pa.string(), "i32": pa.int32(), "i64": pa.int64(), "f32": pa.float32(), "bool": pa.bool_(),
    "date": pa.date32(), "ts": TIMESTAMP, "bytes": pa.binary(), "strs": pa.list_(pa.string()), "floats": pa.list_(pa.float32()),
}


def columns_schema(columns: str, dim: int | None = None) -> pa.Schema:
    """The Arrow schema of ``"id str!, vector vec, ..."``; ``vec`` needs ``dim``."""
    fields = []
    for column in columns.split(","):
        name, kind = column.split()
        required = kind.endswith("!")
        kind = kind.rstrip("!")
        if kind == "vec":
            if dim is None:
                raise ValueError(f"column {name} is a vector: its size is needed")
            dtype = pa.list_(pa.float32(), dim)
        else:
            dtype = _TYPES[kind]
        fields.append(pa.field(name, dtype, nullable=not required))
    return pa.schema(fields)


@dataclass(frozen=True)
class Migration:
    """What brings a table from ``version - 1`` to ``version``: columns added, each filled by a SQL
    expression over the existing columns (``CAST(NULL AS STRING)`` for an empty one)."""

    version: int
    name: str
    add_columns: tuple[tuple[str, str], ...]

    @property
    def columns(self) -> list[str]:
        return [name for name, _ in self.add_columns]


@dataclass(frozen=True)
class TableSpec:
    name: str
    columns: str
    fts: str | None = None
    """The column with a full-text index (recall's BM25 channel), if any."""
    scalar: tuple[tuple[str, str], ...] = ()
    """Scalar indices ``(column, kind)`` built with the full-text index."""
    version: int = 1
    migrations: tuple[Migration, ...] = ()
    """One per version after the first, in order: ``migrations[i].version == i + 2``."""
    after_new_model: str = "drop the table and rebuild it"
    """What to do when the stored vectors have another size than the embedder's."""

    def __post_init__(self):
        if [m.version for m in self.migrations] != list(range(2, self.version + 1)):
            raise ValueError(f"table {self.name} is at version {self.version}: it needs one migration per later version")
        missing = [c for m in self.migrations for c in m.columns if c not in self.names]
        if missing:
            raise ValueError(f"table {self.name}: migrations add columns the spec does not list: {missing}")

    def stored_version(self, column_names: Sequence[str]) -> int:
        """The version a stored table with these columns is at: every migration whose columns it
        holds, counted from the first one it lacks."""
        present = set(column_names)
        version = 1
        for migration in self.migrations:
            if not all(c in present for c in migration.columns):
                break
            version = migration.version
        return version

    def pending(self, column_names: Sequence[str]) -> list[Migration]:
        """The migrations a stored table with these columns still needs, in order."""
        done = self.stored_version(column_names)
        return [m for m in self.migrations if m.version > done]

    @property
    def fts_index(self) -> str:
        return f"{self.fts}_idx"

    @property
    def names(self) -> list[str]:
        return [column.split()[0] for column in self.columns.split(",")]

    @property
    def has_vector(self) -> bool:
        return " vec" in self.columns

    def schema(self, dim: int | None = None) -> pa.Schema:
        return columns_schema(self.columns, dim)


# -- L0 index -------------------------------------------------------------------------------
CHUNKS = TableSpec(
    "chunks",
    "id str!, tenant str!, agent_id str!, user_id str!, path str!, source str!, start_line i32!, "
    "end_line i32!, heading str, turn_ids strs, text str!, text_hash str!, file_hash str!, model str!, "
    "vector vec, file_date date, ts_start ts, updated_at ts!",
    fts="text",
    scalar=(("tenant", "BITMAP"),),
    after_new_model="delete the chunks and files tables (or point MEMORY_PIPELINE_LANCEDB_URI "
    "elsewhere) and backfill every tenant",
)
FILES = TableSpec(
    "files",
    "id str!, tenant str!, path str!, kind str!, status str!, reason str, content_hash str, size i64!, "
    "mtime_ns i64!, model str, chunk_count i32!, indexed_at ts!",
)
EMBEDDING_CACHE = TableSpec("embedding_cache", "id str!, model str!, text_hash str!, vector floats")

# -- consolidation: episodes (L1) and the knowledge graph (L2) -------------------------------
_REMATERIALIZE = "drop the {name} table and consolidate again ('memory-pipeline consolidate --all --again')"
EPISODES = TableSpec(
    "episodes",
    "id str!, tenant str!, agent_id str!, user_id str!, path str!, start_line i32!, end_line i32!, "
    "turn_ids strs, summary str!, l0_abstract str!, key_topics strs, source_id str!, session_id str!, "
    "day str!, created_at ts!, completed_at ts!, completed_by str!, expires_at ts!, promoted_at ts, "
    "produced_by str!, llm_model str, model str!, vector vec, graph_pending bool",
    fts="summary",
    after_new_model=_REMATERIALIZE.format(name="episodes"),
    version=2,
    # Episodes written before the graph step chose its work by this flag were graphed in the run
    # that wrote them: null, not pending.
    migrations=(Migration(2, "episodes_graph_pending", (("graph_pending", "CAST(NULL AS BOOLEAN)"),)),),
)
ENTITIES = TableSpec(
    "entities",
    "id str!, tenant str!, name str!, type str!, aliases strs, episode_ids strs, first_seen ts, "
    "last_seen ts, vector vec",
    after_new_model=_REMATERIALIZE.format(name="entities"),
)
RELATIONS = TableSpec(
    "relations",
    # valid_from: when it starts holding (the later date its statement names, if any); said_at:
    # when it was said.
    "id str!, tenant str!, subject_id str!, subject str!, predicate str!, object_id str, object str!, "
    "object_type str!, valid_from ts, valid_to ts, single_valued bool!, source_episode str!, path str!, "
    "line i32!, evidence str!, rule str!, confidence f32!, said_at ts",
    version=2,
    # Until the graph is rebuilt, when a relation was said is when it was first held (the only date
    # version 1 stored).
    migrations=(Migration(2, "relations_said_at", (("said_at", "valid_from"),)),),
)
ENTITY_MERGES = TableSpec(
    "entity_merges",
    # status: merged | ambiguous
    "id str!, tenant str!, from_id str!, from_name str!, into_id str!, into_name str!, status str!, "
    "reason str!, score f32!, decided_at ts!",
)

# -- typed memories -------------------------------------------------------------------------
MEMORIES = TableSpec(
    "memories",
    "id str!, tenant str!, memory_type str!, content str!, reasoning str, occurred_at ts, happens_at ts, "
    "confidence f32!, source str!, source_ref str, model str, vector vec, created_at ts!, updated_at ts!, "
    "content_hash str!",
    fts="content",
    after_new_model="drop the memories table and run `memory-pipeline memories ingest` again (live "
    "memories must be stored again)",
)
MEMORY_AUDIT = TableSpec(
    "memory_audit",
    # actor: the tool or run that did it; never the content
    "id str!, tenant str!, memory_id str!, op str!, memory_type str, fields strs, reason str, actor str!, at ts!",
)
MEMORY_SOURCES = TableSpec(
    "memory_sources",
    # options: the extractor version and options the file was read with
    "id str!, tenant str!, path str!, content_hash str!, memory_ids strs, options str, extracted_at ts!",
)

# -- time: which statement a later one replaced (timeline/records.py) ----------------------------
SUPERSESSIONS = TableSpec(
    "supersessions",
    # old_ref / new_ref: path#Lline of a turn or note line, or facts/<id>; new_said_at: when the old
    # one stopped holding; changed: value classes that changed (empty: said to have changed);
    # decided_by: extractive | llm; old_sentence: the one sentence that changed when the old statement
    # says more than it (null when it is the whole statement); it goes with its record when the
    # statement is forgotten.
    "id str!, tenant str!, old_ref str!, old_kind str!, old_said_at ts!, new_ref str!, new_kind str!, "
    "new_said_at ts!, attribute str!, changed strs, cues strs, score f32!, decided_by str!, decided_at ts!, "
    "old_sentence str",
    version=2,
    migrations=(Migration(2, "supersessions_old_sentence", (("old_sentence", "CAST(NULL AS STRING)"),)),),
)

STATEMENT_PARSES = TableSpec(
    "statement_parses",
    # What supersession reads of each statement, kept between runs (timeline/parse_cache.py):
    # kind zdoc: a turn's, a turn's line's or a note line's spaCy parse (Doc.to_bytes, zlib), also
    # read by typed memories, summaries, the graph and dreaming; kind vector: a claim's vector
    # (float32 bytes); keyed by the text's hash. A supersession run drops the rows no text of the
    # tenant's files needs.
    "id str!, tenant str!, kind str!, key str!, data bytes!",
)

BUILT_FROM = TableSpec(
    "consolidation_inputs",
    # What a consolidation step last built each unit from (consolidation/store.py): today step
    # supersession with unit the tenant; digest: a hash of what the step read and the settings
    # that shaped it (never the text). Equal: nothing to redo.
    "id str!, tenant str!, step str!, unit str!, digest str!, built_at ts!",
)

# -- activation: which units recall handed out and which were used (activation/) ------------------
ACCESS_LOG = TableSpec(
    "access_log",
    # unit: the citation as the caller saw it (scrubbed); row_ids: the recall rows it showed, when
    # known; event: returned | used; channel: the command or tool (search, inject, get, mcp_search, ...).
    # Never the query or the text.
    "id str!, tenant str!, unit str!, row_ids strs, event str!, channel str!, at ts!",
    scalar=(("tenant", "BITMAP"),),
)
ACTIVATION = TableSpec(
    "activation",
    # One row per recall row (chunk, episode or typed memory) that was ever returned or used:
    # its decayed activation and tier (activation/decay.py), rewritten per tenant by the nightly run.
    "id str!, tenant str!, row_id str!, activation f32!, use_activation f32!, tier str!, used i32!, returned i32!, "
    "last_at ts!, computed_at ts!",
)

TABLES = {spec.name: spec for spec in (
    CHUNKS, FILES, EMBEDDING_CACHE, EPISODES, ENTITIES, RELATIONS, ENTITY_MERGES, MEMORIES, MEMORY_AUDIT,
    MEMORY_SOURCES, SUPERSESSIONS, STATEMENT_PARSES, BUILT_FROM, ACCESS_LOG, ACTIVATION,
)}
