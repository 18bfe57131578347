"""Activation as a ranking feature that only breaks near-ties. Read side: no Dagster, no models.

A candidate's order key is its score times ``1 + MAX_LIFT * u / (u + USE_SCALE)`` for its use
activation ``u`` (``decay.py``: its uses, decayed; being shown does not count): at most
``MAX_LIFT`` (3 %) above its own score; one use today lifts it by 2.4 %, a week of daily use by
2.9 %. So a used unit passes an unused one only when their scores are within 3 % of each other,
and the score itself is untouched: the minimum score, the inject threshold and every reported
figure stay what relevance made them; an irrelevant result is never lifted. Without any activation
(no log yet, or a tenant never recalled) the order is exactly the one of the scores.

Activation changes nightly; each process reads a tenant's rows once per version of the table.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from datetime import timedelta
from pathlib import Path

from memory_pipeline.activation.decay import COOL_TIER, HOT_TIER, WARM_TIER
from memory_pipeline.store.base import sql_str
from memory_pipeline.store.tables import ACTIVATION

MAX_LIFT = 0.03
USE_SCALE = 0.25
LOOK_AGAIN_S = 60.0
"""How often a process looks for the activation table on object storage while it does not exist
(it appears after the first nightly run)."""


def lift(use_activation: float) -> float:
    """The factor on a score of a unit with this use activation: 1.0 (never used) to 1 + MAX_LIFT."""
    return 1.0 + MAX_LIFT * use_activation / (use_activation + USE_SCALE) if use_activation > 0 else 1.0


class ActivationIndex:
    """Activation and tier of each recall row, per tenant, of one database."""

    def __init__(self, uri: str):
        self.uri = uri
        self._db = None
        self._table_handle = None
        self._looked_at = float("-inf")
        self._lock = threading.Lock()
        self._tenants: dict[str, tuple[int, dict[str, tuple[float, str]]]] = {}

    def _table(self):
        """The open table (its version is checked at each read, about 1 ms); while it does not
        exist, looked for on a local folder by its directory, elsewhere at most every
        ``LOOK_AGAIN_S`` (listing and opening cost about 8 ms)."""
        import lancedb

        if self._table_handle is not None:
            return self._table_handle
        if "://" in self.uri:
            if time.monotonic() - self._looked_at < LOOK_AGAIN_S:
                return None
        elif not (Path(self.uri) / f"{ACTIVATION.name}.lance").is_dir():  # a local folder: a stat answers
            return None
        self._looked_at = time.monotonic()
        if self._db is None:
            self._db = lancedb.connect(self.uri, read_consistency_interval=timedelta(0))
        names = self._db.list_tables()
        if ACTIVATION.name in getattr(names, "tables", names):
            self._table_handle = self._db.open_table(ACTIVATION.name)
        return self._table_handle

    def of_tenants(self, tenants: Iterable[str]) -> dict[tuple[str, str], tuple[float, str]]:
        """(tenant, row id) -> (use activation, tier) for the rows of ``tenants`` that have one."""
        tenants = sorted(set(tenants))
        if not tenants or "://" not in self.uri and not _is_dir(self.uri):
            return {}
        with self._lock:
            table = self._table()
            if table is None:
                return {}
            version = table.version
            out = {}
            for tenant in tenants:
                held = self._tenants.get(tenant)
                if held is None or held[0] != version:
                    rows = (table.search().where(f"tenant = {sql_str(tenant)}").select(["row_id", "use_activation", "tier"])
                            .limit(None).to_arrow().to_pylist())
                    held = self._tenants[tenant] = (version, {r["row_id"]: (r["use_activation"], r["tier"]) for r in rows})
                out.update({(tenant, rid): value for rid, value in held[1].items()})
            return out


def _is_dir(uri: str) -> bool:
    return Path(uri).is_dir()


_INDEXES: dict[str, ActivationIndex] = {}
_INDEXES_LOCK = threading.Lock()


def activation_index(uri: str) -> ActivationIndex:
    """The process-wide activation index of one database (like recall's tenant cache)."""
    with _INDEXES_LOCK:
        return _INDEXES.setdefault(uri, ActivationIndex(uri))


def order_key(known: dict[tuple[str, str], tuple[float, str]]):
    """A sort key for recall candidates: score lifted by activation, then the scope's rank."""

    def key(candidate) -> tuple[float, int]:
        found = known.get((candidate.scope.key, candidate.rows.ids[candidate.row]))
        return (-candidate.score * lift(found[0] if found else 0.0), candidate.scope.rank)

    return key


def tier_of(known: dict[tuple[str, str], tuple[float, str]], tenant: str, row_ids: Iterable[str]) -> str:
    """The hottest tier among a result's rows (``cool`` when none was ever handed out)."""
    tiers = {known[(tenant, rid)][1] for rid in row_ids if (tenant, rid) in known}
    return next((t for t in (HOT_TIER, WARM_TIER) if t in tiers), COOL_TIER)


def mark_tiers(results: list, known: dict[tuple[str, str], tuple[float, str]]) -> list:
    """Search results with their ``tier`` set from their rows' activation."""
    for result in results:
        result.tier = tier_of(known, result.tenant, result.ids)
    return results
