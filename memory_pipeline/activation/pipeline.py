"""One tenant's activation, from its access log: the plain function the nightly asset runs.

Events name recall rows (``row_ids``) when recall returned them; a unit read with ``get`` names
only its citation, which is resolved here: ``facts/<id>`` and ``episodes/<id>`` are their own rows,
``path#Ls-Le`` the tenant's chunks of that file overlapping those lines.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from memory_pipeline.activation.access_log import flush_spool
from memory_pipeline.activation.decay import COOL_TIER, HOT_TIER, WARM_TIER, WINDOW_DAYS, Activation, activations
from memory_pipeline.store.base import LanceBase, sql_str, stable_id
from memory_pipeline.store.tables import ACCESS_LOG, ACTIVATION, CHUNKS

_RECORD_RE = re.compile(r"^(?:facts|episodes)/(?P<id>[A-Za-z0-9_-]+)$")
_LINES_RE = re.compile(r"^(?P<path>.+?)#L(?P<start>\d+)(?:-L?(?P<end>\d+))?$")


@dataclass
class ActivationReport:
    tenant: str
    events: int = 0
    events_dropped: int = 0  # older than the window, deleted from the log
    unresolved: int = 0  # events whose citation names no row any more (an edited or deleted file)
    tiers: dict[str, int] = field(default_factory=lambda: {HOT_TIER: 0, WARM_TIER: 0, COOL_TIER: 0})
    top: list[Activation] = field(default_factory=list)

    @property
    def rows(self) -> int:
        return sum(self.tiers.values())


def tenant_activation(uri: str, tenant: str, now: datetime) -> ActivationReport:
    """Recompute ``tenant``'s activation rows at ``now`` and drop its log rows past the window."""
    flush_spool(uri, tenant)
    base = LanceBase(uri)
    report = ActivationReport(tenant)
    cutoff = now - timedelta(days=WINDOW_DAYS)
    where = f"tenant = {sql_str(tenant)}"
    if base.has(ACCESS_LOG):
        report.events_dropped = base.open(ACCESS_LOG).count_rows(f"{where} AND at < TIMESTAMP '{cutoff:%Y-%m-%d %H:%M:%S}'")
        if report.events_dropped:
            base.delete(ACCESS_LOG, f"{where} AND at < TIMESTAMP '{cutoff:%Y-%m-%d %H:%M:%S}'")
    log = base.read(ACCESS_LOG, where, ["unit", "row_ids", "event", "at"]).to_dicts()
    report.events = len(log)
    resolve = _Resolver(base, tenant)
    events = []
    for row in log:
        ids = row["row_ids"] or resolve(row["unit"])
        report.unresolved += not ids
        events += [(rid, row["event"], row["at"]) for rid in ids]
    found = activations(events, now)
    rows = [{"id": stable_id(tenant, a.row_id), "tenant": tenant, "row_id": a.row_id, "activation": a.activation,
             "use_activation": a.use_activation, "tier": a.tier, "used": a.used, "returned": a.returned, "last_at": a.last_at, "computed_at": now}
            for a in found.values()]
    if base.has(ACTIVATION):
        base.delete(ACTIVATION, where)
    base.upsert(ACTIVATION, rows)
    report.tiers.update(Counter(a.tier for a in found.values()))
    report.top = sorted(found.values(), key=lambda a: (-a.activation, a.row_id))[:5]
    return report


class _Resolver:
    """Row ids of a cited unit, reading the tenant's chunks once."""

    def __init__(self, base: LanceBase, tenant: str):
        self.base, self.tenant, self._chunks = base, tenant, None

    def __call__(self, unit: str) -> list[str]:
        record = _RECORD_RE.match(unit)
        if record:
            return [record["id"]]
        lines = _LINES_RE.match(unit)
        if not lines:
            return []
        start = int(lines["start"])
        end = int(lines["end"] or start)
        return [rid for rid, path, lo, hi in self.chunks() if path == lines["path"] and lo <= end and hi >= start]

    def chunks(self) -> list[tuple[str, str, int, int]]:
        if self._chunks is None:
            frame = self.base.read(CHUNKS, f"tenant = {sql_str(self.tenant)}", ["id", "path", "start_line", "end_line"])
            self._chunks = list(frame.iter_rows())
        return self._chunks
