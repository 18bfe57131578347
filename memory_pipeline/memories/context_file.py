"""What an agent loads into its prompt every cycle, kept on disk while nothing it is made of
changes: its working memory (``working.py``) and bulletins (``bulletin.py``). A new process then
answers without LanceDB (whose import alone costs a one-shot ``memory-pipeline context`` about
1 s of CPU) and without reading a table.

One file per tenant and section, ``<LanceDB folder>/_recall_index/context/<tenant>/<name>.json``
(``working``, ``bulletin-memory``, ``bulletin-context``), beside recall's own persisted files,
holding the last one made and what it was made from:
- the version stamp (``store.lance_files.version_stamp``) of every table but those it never reads
  (``UNREAD``), so a table added later makes the file stale, never wrong;
- what the reader asked (budget, recent entries, items per section), whom it reads (its scopes: a
  team member reads its leader's memory), the timezone's source (the tenant's MEMORY.md) and the
  code that writes it (``CODE``: an upgrade or an edit makes it again), each file by size and time;
- the span of time it holds for: from when it was made until the first instant a dated item
  enters or leaves a section (``bulletin.next_change``).
Anything else (another stamp, a later instant, an unreadable file) makes it again.

Only a database in a local folder keeps one: on object storage each machine would hold its own
copy, which forgetting a tenant on another machine could not remove. The file holds what the
section shows, so it goes wherever those rows go: forgetting a tenant removes its folder
(``recall.index.files.forget_index_files``), and purging deleted memories removes every tenant's
(``TypedMemoryStore.purge_deleted``).
"""

from __future__ import annotations

import json
import logging
import os
from datetime import UTC, datetime
from pathlib import Path

from memory_pipeline.store import lance_files

log = logging.getLogger(__name__)

FOLDER = "context"
WORKING = "working"
# Tables no working memory or bulletin is made from: an ingest of notes and transcripts, or a recall handing
# out results, leaves the kept one standing.
UNREAD = frozenset({"chunks", "files", "embedding_cache", "access_log", "memory_audit"})
# What chooses and writes their items, and this module's own format: an edit or an upgrade of
# any of them makes every kept section again.
CODE = tuple(Path(__file__).with_name(name) for name in ("working.py", "bulletin.py", "context_file.py"))


def fingerprint(uri: str, profile: list[Path], asked: dict) -> dict | None:
    """What a section for ``asked`` is made from, as it stands now (``profile``: the
    tenant's MEMORY.md files, ``tenancy.profile_files``); None when it cannot be told without
    LanceDB (object storage, a table whose manifest this cannot read)."""
    if not lance_files.is_local(uri):
        return None
    names = lance_files.table_names(uri)
    if names is None:
        return None
    tables = {}
    for name in sorted(names - UNREAD):
        version = lance_files.latest_version(uri, name)
        stamp = None if version is None else lance_files.version_stamp(uri, name, version)
        if stamp is None:
            return None
        tables[name] = stamp
    return {"tables": tables, "profile": _stats(profile), "code": _stats(CODE), "asked": asked}


def _stats(files) -> list:
    out = []
    for file in files:
        try:
            stat = file.stat()
            out.append([file.name, stat.st_size, stat.st_mtime_ns])
        except OSError:
            out.append([file.name, None, None])
    return out


def path(uri: str, tenant: str, name: str = WORKING) -> Path:
    from memory_pipeline.recall.index.files import INDEX_FOLDER

    return Path(uri) / INDEX_FOLDER / FOLDER / tenant / f"{name}.json"


def read(uri: str, tenant: str, made_from: dict | None, now: datetime, name: str = WORKING) -> dict | None:
    """The kept section ``name`` if it was made from ``made_from`` and still holds at ``now``;
    else None."""
    if made_from is None:
        return None
    try:
        kept = json.loads(path(uri, tenant, name).read_text(encoding="utf-8"))
        if kept.get("made_from") != made_from:
            return None
        made_at = datetime.fromisoformat(kept["made_at"])
        until = kept.get("valid_until")
        if now < made_at or (until is not None and now >= datetime.fromisoformat(until)):
            return None
        return kept["section"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def keep(uri: str, tenant: str, made_from: dict | None, now: datetime, found: dict, valid_until: datetime | None,
         name: str = WORKING) -> None:
    """Write the section ``found`` for the next reader (atomically); a failure is logged and
    costs only the next reader's time."""
    if made_from is None:
        return
    target = path(uri, tenant, name)
    record = {"made_from": made_from, "made_at": now.astimezone(UTC).isoformat(),
              "valid_until": valid_until.astimezone(UTC).isoformat() if valid_until else None,
              "section": found}
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        part = target.with_name(f".{target.name}.{os.getpid()}")
        part.write_text(json.dumps(record, ensure_ascii=False, default=str), encoding="utf-8")
        os.replace(part, target)
    except OSError as exc:
        log.warning("%s of %s not kept for the next reader: %s", name, tenant, exc)
