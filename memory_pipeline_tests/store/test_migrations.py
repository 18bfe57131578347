"""Schema migrations: ordered, named, driven by each table's spec version, applied once on open.

Proves: a table written at version 1 of a spec (without the columns later versions added) is found
migrated when the store opens it, its rows kept and the new column filled by the migration's
expression; a second open applies nothing; specs whose migrations do not match their version are
refused when the package is imported.
"""

from datetime import datetime, timezone

import lancedb
import pyarrow as pa
import pytest

from memory_pipeline.store.base import LanceBase
from memory_pipeline.store.tables import RELATIONS, SUPERSESSIONS, Migration, TableSpec, columns_schema


def _version_1(spec: TableSpec) -> pa.Schema:
    added = {c for m in spec.migrations for c in m.columns}
    return pa.schema([f for f in spec.schema() if f.name not in added])


def _relation(at: datetime) -> dict:
    return {
        "id": "r1", "tenant": "a~u", "subject_id": "s", "subject": "Alice", "predicate": "lives_in",
        "object_id": None, "object": "Denver", "object_type": "GPE", "valid_from": at, "valid_to": None,
        "single_valued": True, "source_episode": "e1", "path": "a/sessions/u/s.jsonl", "line": 3,
        "evidence": "I live in Denver.", "rule": "lives_in", "confidence": 0.9,
    }


def test_version_1_tables_are_migrated_on_open(tmp_path):
    at = datetime(2026, 3, 1, tzinfo=timezone.utc)
    db = lancedb.connect(str(tmp_path))
    db.create_table("relations", pa.Table.from_pylist([_relation(at)], schema=_version_1(RELATIONS)))
    db.create_table("supersessions", schema=_version_1(SUPERSESSIONS))

    store = LanceBase(tmp_path)
    assert RELATIONS.stored_version(db.open_table("relations").schema.names) == 1
    rows = store.read(RELATIONS).to_dicts()
    assert [(r["id"], r["said_at"]) for r in rows] == [("r1", at)]
    assert store.open(SUPERSESSIONS).schema.names == SUPERSESSIONS.names

    fresh = lancedb.connect(str(tmp_path))
    for spec in (RELATIONS, SUPERSESSIONS):
        table = fresh.open_table(spec.name)
        assert spec.stored_version(table.schema.names) == spec.version == 2
        assert spec.pending(table.schema.names) == []
    versions = fresh.open_table("relations").version
    LanceBase(tmp_path).open(RELATIONS)  # nothing left to apply: no new table version
    assert lancedb.connect(str(tmp_path)).open_table("relations").version == versions


def test_current_tables_need_no_migration(tmp_path):
    store = LanceBase(tmp_path)
    table = store.open(SUPERSESSIONS)
    assert (SUPERSESSIONS.stored_version(table.schema.names), table.version) == (2, 1)


def test_a_spec_must_name_one_migration_per_version():
    with pytest.raises(ValueError, match="one migration per later version"):
        TableSpec("t", "id str!, x str", version=2)
    with pytest.raises(ValueError, match="does not list"):
        TableSpec("t", "id str!", version=2, migrations=(Migration(2, "t_x", (("x", "id"),)),))
    assert columns_schema("id str!, x str").names == TableSpec(
        "t", "id str!, x str", version=2, migrations=(Migration(2, "t_x", (("x", "id"),)),)
    ).names
