"""What a LanceDB database's files say about its tables without LanceDB: their names and versions.

Importing ``lancedb`` takes 2-3 s of CPU (its REST namespace client builds hundreds of models),
more than everything else a one-shot query does. A query answered from recall's own files
(``recall/index/files.py``) needs only to know which tables exist and whether one has a new
version, and the database's folder or bucket prefix says both: a table is a ``<name>.lance``
folder (LanceDB's own listing), and each committed version is one manifest in its ``_versions``
folder, named by the version or, in Lance's newer naming, by ``2**64 - 1 - version`` (so names
sort newest first). On object storage that is one listing request each (``object_store.py``).
``memory_pipeline_tests/store/test_lance_files.py`` holds both to what LanceDB reports, on a
folder and on an S3 API, so a change of layout fails there. Anything unreadable answers None,
and the caller asks LanceDB.
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path

from memory_pipeline.store import object_store

_U64_MAX = 2**64 - 1
# Versions below this are plain numbers; the newer naming's are above it.
_INVERTED_FROM = 2**63


def is_local(uri: str) -> bool:
    return "://" not in str(uri)


def table_names(uri: str) -> set[str] | None:
    """The tables of the database at ``uri``; None for a missing folder or an unreadable store."""
    remote = _remote(uri)
    if remote is not None:
        store, base = remote
        try:
            return {name[: -len(".lance")] for name in object_store.folders(store, base) if name.endswith(".lance")}
        except OSError:
            return None
    try:
        with os.scandir(uri) as entries:
            return {
                entry.name[: -len(".lance")]
                for entry in entries
                if entry.name.endswith(".lance") and entry.is_dir()
            }
    except OSError:
        return None


def manifest_names(version: int) -> tuple[str, str]:
    """The file names version ``version``'s manifest may have (newer naming first)."""
    return f"{_U64_MAX - version}.manifest", f"{version}.manifest"


def latest_version(uri: str, table: str) -> int | None:
    """The newest committed version of ``table``, as ``table.version`` reads it; None when the
    database holds no manifest this module can read (then ask LanceDB)."""
    versions = _manifests(uri, table)
    return None if versions is None else max(versions, default=None)


def version_stamp(uri: str, table: str, version: int) -> list[int] | None:
    """What identifies ``table``'s ``version``: its number and its manifest's size and time (a
    table dropped and made again restarts its numbers); None when no manifest is readable."""
    remote = _remote(uri)
    folder = f"{table}.lance/_versions"
    for name in manifest_names(version):
        try:
            if remote is not None:
                # An object's time has one-second resolution: a table dropped and made again
                # within it could repeat its manifest's size and time, but not its bytes (Lance
                # writes the commit time into them, in nanoseconds). Manifests are a few KB.
                store, base = remote
                data = object_store.read_bytes(store, f"{base}/{folder}/{name}")
                if data is None:
                    continue
                return [int(version), len(data), zlib.crc32(data)]
            stat = (Path(uri) / folder / name).stat()
            return [int(version), stat.st_size, stat.st_mtime_ns]
        except OSError:
            continue
    return None


def _manifests(uri: str, table: str) -> list[int] | None:
    """The version of each manifest in the table's ``_versions`` folder; None if unreadable."""
    remote = _remote(uri)
    try:
        if remote is not None:
            store, base = remote
            names = [info.base_name for info in object_store.listing(store, f"{base}/{table}.lance/_versions")]
        else:
            with os.scandir(Path(uri) / f"{table}.lance" / "_versions") as entries:
                names = [entry.name for entry in entries]
    except OSError:
        return None
    versions = []
    for name in names:
        stem, dot, ext = name.partition(".")
        if ext == "manifest" and stem.isdigit():
            number = int(stem)
            versions.append(_U64_MAX - number if number >= _INVERTED_FROM else number)
    return versions


def _remote(uri: str):
    return object_store.filesystem(uri)
