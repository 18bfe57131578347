"""The access log: which units recall handed to a caller (returned) and which the caller used
(injected into a prompt, read with ``get``), per tenant, in the ``access_log`` table.

A row holds the unit's citation as the caller saw it (scrubbed of secrets, like every stored
text), the recall rows it showed when known, the event, the channel and the time; never the query
or the text. Recording never fails a recall: a write that fails is logged and dropped. The rows
go with their tenant when it is forgotten (``forget_tenant`` clears every table with a tenant
column); the nightly activation run drops rows older than ``decay.WINDOW_DAYS``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from memory_pipeline.activation.decay import RETURNED, USED
from memory_pipeline.store.tables import ACCESS_LOG

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Access:
    """One unit as a caller received it: its tenant, citation and the recall rows it showed."""

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
    from memory_pipeline.text.scrub import scrub_secrets

    now = now or datetime.now(UTC)
    rows = []
    for event, units in ((RETURNED, returned), (USED, used)):
        for access in units:
            rows.append({"id": uuid.uuid4().hex, "tenant": access.tenant, "unit": scrub_secrets(access.unit).text,
                         "row_ids": list(access.row_ids), "event": event, "channel": channel, "at": now})
    return rows


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
        from memory_pipeline.store.base import LanceBase

        LanceBase(uri).upsert(ACCESS_LOG, rows)
    except Exception as exc:  # noqa: BLE001 - the caller got its answer; a lost access only cools a unit
        log.warning("access log not written (%s events, channel %s): %s: %s", len(rows), channel, type(exc).__name__, exc)
        return 0
    return len(rows)
