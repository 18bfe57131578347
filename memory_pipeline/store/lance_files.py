"""What a local LanceDB folder says about its tables without LanceDB: their names and versions.

Importing ``lancedb`` takes 2-3 s of CPU (its REST namespace client builds hundreds of models),
more than everything else a one-shot query does. A query answered from recall's own files
(``recall/index_files.py``) needs only to know which tables exist and whether one has a new
version, and a local folder says both: a table is a ``<name>.lance`` folder (LanceDB's own
listing), and each committed version is one manifest in its ``_versions`` folder, named by the
version or, in Lance's newer naming, by ``2**64 - 1 - version`` (so names sort newest first).
``memory_pipeline_tests/store/test_lance_files.py`` holds both to what LanceDB reports, so a
change of layout fails there. Anything else (object storage, no readable manifest) answers
None, and the caller asks LanceDB.
"""

from __future__ import annotations

import os
from pathlib import Path

_U64_MAX = 2**64 - 1
# Versions below this are plain numbers; the newer naming's are above it.
_INVERTED_FROM = 2**63


def is_local(uri: str) -> bool:
    return "://" not in str(uri)


def table_names(uri: str) -> set[str] | None:
    """The tables of the database at ``uri``; None for object storage or a missing folder."""
    if not is_local(uri):
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
    folder holds no manifest this module can read (then ask LanceDB)."""
    if not is_local(uri):
        return None
    versions = []
    try:
        with os.scandir(Path(uri) / f"{table}.lance" / "_versions") as entries:
            for entry in entries:
                stem, dot, ext = entry.name.partition(".")
                if ext == "manifest" and stem.isdigit():
                    number = int(stem)
                    versions.append(_U64_MAX - number if number >= _INVERTED_FROM else number)
    except OSError:
        return None
    return max(versions, default=None)
