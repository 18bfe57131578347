"""The access log: which units recall handed to a caller (returned) and which the caller used
(injected into a prompt, read with ``get``), per tenant, in the ``access_log`` table.

On a local database a recall appends its events to a spool file of its tenant beside the tables
(``_access_spool/<tenant>.jsonl``) instead of writing the table: a one-shot search then needs no
LanceDB import (seconds of CPU) and no table commit. The activation run moves a tenant's spooled
events into the table before it reads them (``flush_spool``). Elsewhere (object storage) the
events are appended to the table at once (new rows: no ``merge_insert`` reading every id); each
search adds a fragment, and the table is compacted whenever it holds ``COMPACT_AT_FRAGMENTS``
(``store.base.settle_table``), not only by the nightly optimize.

A row holds the unit's citation as the caller saw it (free of secrets, like every stored text),
the recall rows it showed when known, the event, the channel and the time; never the query or the
text. A citation recall built from its rows (one that names them) is stored as it is: its path
was screened for secrets when it was indexed (``sources/workspace.py`` skips a file or folder whose
name holds one) and is stored in the index already, and its other citations are record ids. Any
other citation (a path a caller asked ``get`` for) is scrubbed first. So a one-shot search never
imports the scrubber (0.13 CPU s of a 1 s process). Recording never fails a recall: a write that
fails is logged and dropped. The rows go with their tenant when it is forgotten (``forget_tenant``
clears every table with a tenant column); the nightly activation run drops rows older than
``decay.WINDOW_DAYS``.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from memory_pipeline.activation.decay import RETURNED, USED
from memory_pipeline.store.tables import ACCESS_LOG

log = logging.getLogger(__name__)

SPOOL = "_access_spool"


def spool_file(uri: str, tenant: str) -> Path:
    """The spool of one tenant's events on a local database (tenant keys are safe file names)."""
    return Path(uri) / SPOOL / f"{tenant}.jsonl"


@dataclass(frozen=True)
class Access:
    """One unit as a caller received it: its tenant, citation and the recall rows it showed (given
    only for a unit cited from those rows: it is then stored unscrubbed)."""

    tenant: str
    unit: str
    row_ids: tuple[str, ...] = ()

    @classmethod
    def of(cls, result) -> "Access":
        """From a search result (``tenant``, ``citation``, ``ids``) or a ``get`` result (``tenant``,
        ``citation``)."""
        return cls(result.tenant, result.citation, tuple(getattr(result, "ids", None) or ()))


def access_rows(channel: str, returned: Iterable[Access] = (), used: Iterable[Access] = (),
                now: datetime | None = None) -> list[dict]:
    """The log rows of one call: one per unit and event."""
    now = now or datetime.now(UTC)
    rows = []
    for event, units in ((RETURNED, returned), (USED, used)):
        for access in units:
            rows.append({"id": uuid.uuid4().hex, "tenant": access.tenant, "unit": _stored_unit(access),
                         "row_ids": list(access.row_ids), "event": event, "channel": channel, "at": now})
    return rows


def _stored_unit(access: Access) -> str:
    """The citation as it may be stored: one cited from the index's rows as it is (screened when
    indexed, see the module's docstring), any other scrubbed of secrets."""
    if access.row_ids:
        return access.unit
    from memory_pipeline.text.scrub import scrub_secrets  # detect-secrets: only for a citation from outside the index

    return scrub_secrets(access.unit).text


def record_access(uri: str, channel: str, *, returned: Sequence = (), used: Sequence = (),
                  now: datetime | None = None) -> int:
    """Append one call's events to the log; returns how many were written (0 on any failure).

    ``returned`` and ``used`` hold ``Access`` values or results recall gave (search results, a
    ``get`` result)."""
    returned = [a if isinstance(a, Access) else Access.of(a) for a in returned]
    used = [a if isinstance(a, Access) else Access.of(a) for a in used]
    rows = access_rows(channel, returned, used, now)
    if not rows or "://" not in uri and not Path(uri).is_dir():  # nothing indexed yet: nothing to activate
        return 0
    try:
        if "://" in uri:
            from memory_pipeline.store.base import LanceBase

            store = LanceBase(uri)
            store.append(ACCESS_LOG, rows)
            store.settle_table(ACCESS_LOG)  # a search adds a fragment; many make every write slower
        else:
            _spool(uri, rows)
    except Exception as exc:  # noqa: BLE001 - the caller got its answer; a lost access only cools a unit
        log.warning("access log not written (%s events, channel %s): %s: %s", len(rows), channel, type(exc).__name__, exc)
        return 0
    return len(rows)


def _spool(uri: str, rows: list[dict]) -> None:
    by_tenant: dict[str, list[str]] = {}
    for row in rows:
        line = json.dumps({**row, "at": row["at"].isoformat()}, ensure_ascii=False)
        by_tenant.setdefault(row["tenant"], []).append(line)
    for tenant, lines in by_tenant.items():
        path = spool_file(uri, tenant)
        path.parent.mkdir(exist_ok=True)
        with open(path, "a", encoding="utf-8") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)  # one writer's lines stay whole and together
            handle.write("\n".join(lines) + "\n")


def flush_spool(uri: str, tenant: str | None = None) -> int:
    """Move spooled events (one tenant's, or every tenant's) into the ``access_log`` table;
    returns how many were moved. A line that does not parse (a write cut short) is dropped."""
    folder = Path(uri) / SPOOL
    if "://" in uri or not folder.is_dir():
        return 0
    from memory_pipeline.store.base import LanceBase

    paths = [spool_file(uri, tenant)] if tenant else sorted(folder.glob("*.jsonl"))
    moved = 0
    for path in paths:
        if not path.exists():
            continue
        with open(path, "r+", encoding="utf-8") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            rows = []
            for line in handle:
                try:
                    row = json.loads(line)
                    rows.append({**row, "at": datetime.fromisoformat(row["at"])})
                except (ValueError, KeyError, TypeError):
                    continue
            if rows:
                LanceBase(uri).upsert(ACCESS_LOG, rows)  # ids are the events' own: a retry adds nothing
            handle.truncate(0)
            moved += len(rows)
        os.unlink(path)
    return moved


def forget_spool(uri: str, matches) -> list[str]:
    """Delete the spool files of the tenants ``matches(key)`` accepts; the files removed (relative
    to the LanceDB folder)."""
    folder = Path(uri) / SPOOL
    if "://" in str(uri) or not folder.is_dir():
        return []
    gone = []
    for path in sorted(folder.glob("*.jsonl")):
        if matches(path.name[: -len(".jsonl")]):
            path.unlink(missing_ok=True)
            gone.append(f"{SPOOL}/{path.name}")
    return gone
