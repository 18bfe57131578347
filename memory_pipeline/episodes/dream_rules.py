"""When a tenant dreams: with at least ``THRESHOLD`` unpromoted episodes, and not within
``DREAM_DEBOUNCE`` of its last dreaming run. The dreaming sensor keeps the last runs in its cursor;
``memory-pipeline dream`` reads them from the instance, and only when a tenant has the episodes:
plain Python here, so a command that finds nothing to dream answers without loading Dagster."""

from __future__ import annotations

from datetime import datetime, timedelta

THRESHOLD = 5
DREAM_DEBOUNCE = timedelta(minutes=10)


def plan_dreaming(
    counts: dict[str, int], cursor: dict[str, float], now: datetime, threshold: int = THRESHOLD
) -> tuple[list[str], dict[str, float], dict[str, str]]:
    """(tenants to dream now, new cursor, why each other tenant with episodes waits)."""
    due, waiting = [], {}
    new_cursor = dict(cursor)
    stamp = now.timestamp()
    for tenant, count in sorted(counts.items()):
        if count < threshold:
            waiting[tenant] = f"{count} unpromoted episodes, fewer than {threshold}"
            continue
        last = cursor.get(tenant)
        if last is not None and stamp - last < DREAM_DEBOUNCE.total_seconds():
            waiting[tenant] = f"requested {int(stamp - last)} s ago, debounced for {int(DREAM_DEBOUNCE.total_seconds())} s"
            continue
        due.append(tenant)
        new_cursor[tenant] = stamp
    return due, new_cursor, waiting
