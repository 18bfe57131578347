"""Proves: what ``store.lance_files`` reads from a LanceDB database's files (its tables, and each
table's latest version and that version's stamp) is what LanceDB itself reports, through adds,
upserts, deletes, compaction with old versions cleaned up, and a table dropped and made again
(its stamp then differs), on a local folder and on an S3 API (moto); a missing folder or an
unreachable store answers None (the caller then asks LanceDB). This is the adapter over Lance's folder layout:
a release that changes it fails here, not in a query."""

from __future__ import annotations

from datetime import timedelta

import lancedb
import pyarrow as pa
import pytest

from memory_pipeline.store import lance_files
from memory_pipeline_tests.helpers.object_store import BUCKET

SCHEMA = pa.schema([pa.field("id", pa.string()), pa.field("n", pa.int64())])


def _rows(*ids: str) -> pa.Table:
    return pa.table({"id": list(ids), "n": list(range(len(ids)))}, schema=SCHEMA)


def _as_lancedb_sees_it(db, uri: str) -> tuple[set[str], dict[str, int]]:
    names = set(getattr(db.list_tables(), "tables", db.list_tables()))
    return names, {name: db.open_table(name).version for name in names}


def _as_the_folder_says(uri: str) -> tuple[set[str] | None, dict[str, int | None]]:
    names = lance_files.table_names(uri)
    return names, {name: lance_files.latest_version(uri, name) for name in names or ()}


@pytest.fixture(params=["folder", "s3"])
def db_uri(request, tmp_path):
    if request.param == "folder":
        return str(tmp_path / "db")
    request.getfixturevalue("s3")
    return f"s3://{BUCKET}/db"


def test_tables_and_versions_match_lancedb_through_every_kind_of_write(db_uri):
    uri = db_uri
    db = lancedb.connect(uri)
    assert _as_the_folder_says(uri) == (set(), {})
    chunks = db.create_table("chunks", schema=SCHEMA)
    upsert = chunks.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
    steps = [
        lambda: db.create_table("episodes", data=_rows("e1")),
        lambda: chunks.add(_rows("a", "b", "c")),
        lambda: upsert.execute(_rows("c", "d")),
        lambda: chunks.delete("id = 'a'"),
        lambda: chunks.optimize(cleanup_older_than=timedelta(0)),  # old manifests removed
        lambda: db.drop_table("episodes"),
        lambda: db.create_table("episodes", data=_rows("e2")),  # its versions start again
        lambda: chunks.add(_rows("e")),
    ]
    seen, stamps = [], []
    for step in steps:
        step()
        seen.append(_as_lancedb_sees_it(db, uri))
        assert _as_the_folder_says(uri) == seen[-1]
        version = seen[-1][1].get("episodes")
        stamps.append(None if version is None else lance_files.version_stamp(uri, "episodes", version))
        assert version is None or stamps[-1][0] == version
    assert seen[-1][0] == {"chunks", "episodes"} and seen[-1][1]["chunks"] > seen[0][1]["chunks"]
    # episodes dropped and made again: its version number comes round again, its stamp does not
    assert stamps[5] is None and stamps[6][0] == stamps[0][0] and stamps[6] != stamps[0]


def test_unreachable_stores_and_missing_folders_answer_none(tmp_path, monkeypatch):
    # A port nothing listens on: a connection refused, at once (no retry for minutes).
    monkeypatch.setenv("AWS_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    assert lance_files.table_names("s3://bucket/memory") is None
    assert lance_files.latest_version("s3://bucket/memory", "chunks") is None
    assert lance_files.table_names("az://container/memory") is None  # a scheme Arrow cannot open
    assert lance_files.table_names(str(tmp_path / "absent")) is None
    assert lance_files.latest_version(str(tmp_path), "chunks") is None


def test_manifest_names_cover_both_of_lances_namings(tmp_path):
    folder = tmp_path / "t.lance" / "_versions"
    folder.mkdir(parents=True)
    newer, older = lance_files.manifest_names(7)
    assert (newer, older) == (f"{2**64 - 1 - 7}.manifest", "7.manifest")
    (folder / older).write_bytes(b"")
    (folder / "3.manifest").write_bytes(b"")
    assert lance_files.latest_version(str(tmp_path), "t") == 7
    for name in ("7.manifest", "3.manifest"):
        (folder / name).unlink()
    (folder / lance_files.manifest_names(9)[0]).write_bytes(b"")
    (folder / lance_files.manifest_names(12)[0]).write_bytes(b"")
    (folder / "latest_version_hint.json").write_text("{}")
    assert lance_files.latest_version(str(tmp_path), "t") == 12
