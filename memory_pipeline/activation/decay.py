"""Activation: how much a unit of memory has been used lately, and its tier. Pure functions.

Every time recall hands a unit to a caller it is *returned*; when the caller injects it into a
prompt or reads it with ``get`` it is *used*. A unit's activation at time ``now`` is the sum over
its access events ``e``:

    activation = sum_e weight(e) * 2 ** (-age_days(e) / HALF_LIFE_DAYS)

with ``weight`` 1.0 for a use and ``RETURNED_WEIGHT`` for a return (being shown is weak evidence
of mattering, being used strong); a unit's returns count once per day, so a unit returned every
day of a week stays warm (0.5) however many questions brought it up, while one use makes it hot. A unit used once today is at 1.0; a week later at 0.5; after
``WINDOW_DAYS`` an event weighs under 0.02 % and is dropped from the log. Tiers:

- hot: activation >= ``HOT`` (about one use in the last week, or several a little longer ago);
- warm: >= ``WARM`` (used within about a month, or returned often);
- cool: everything else, including every unit never handed out.

Tiers read the whole activation; ranking reads ``use_activation``, the same sum over uses only, so
a unit that is merely shown often is never ranked up by it.

The nightly run recomputes every activation from the log at its time, so re-running a night
gives the same values (the sum is the closed form of "multiply by 2^(-1/7) each day, add the
day's events").
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

HALF_LIFE_DAYS = 7.0
RETURNED_WEIGHT = 0.1
USED, RETURNED = "used", "returned"
WEIGHTS = {USED: 1.0, RETURNED: RETURNED_WEIGHT}
HOT, WARM = 1.0, 0.25
HOT_TIER, WARM_TIER, COOL_TIER = "hot", "warm", "cool"
WINDOW_DAYS = 90


@dataclass
class Activation:
    row_id: str
    activation: float = 0.0
    use_activation: float = 0.0  # the same sum over its uses only: what ranking reads (ranking.py)
    used: int = 0
    returned: int = 0
    last_at: datetime | None = None

    @property
    def tier(self) -> str:
        return tier(self.activation)


def tier(activation: float) -> str:
    return HOT_TIER if activation >= HOT else WARM_TIER if activation >= WARM else COOL_TIER


def decayed(weight: float, at: datetime, now: datetime) -> float:
    """One event's weight at ``now``; an event stamped after ``now`` counts as now."""
    age_days = max(0.0, (now - at).total_seconds() / 86_400)
    return weight * math.pow(2.0, -age_days / HALF_LIFE_DAYS)


def activations(events: Iterable[tuple[str, str, datetime]], now: datetime) -> dict[str, Activation]:
    """Activation of every row id from ``(row_id, event, at)`` events; unknown events are ignored."""
    out: dict[str, Activation] = {}
    returned_on: set[tuple[str, object]] = set()
    for row_id, event, at in sorted(events, key=lambda e: e[2]):
        weight = WEIGHTS.get(event)
        if weight is None or at > now:
            continue
        if event == RETURNED:  # shown once a day counts once: a unit many questions bring up is not used
            if (row_id, at.date()) in returned_on:
                continue
            returned_on.add((row_id, at.date()))
        unit = out.setdefault(row_id, Activation(row_id))
        unit.activation += decayed(weight, at, now)
        unit.use_activation += decayed(weight, at, now) if event == USED else 0.0
        unit.used += event == USED
        unit.returned += event == RETURNED
        unit.last_at = at if unit.last_at is None else max(unit.last_at, at)
    return out
