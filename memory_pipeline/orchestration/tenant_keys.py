"""Which partition keys name a tenant of the workspace: checked when a run starts, listed (and
removed) when stale.

A partition added by hand in the UI is never checked by Dagster: ``support-bot~zed`` (no folder)
was "materialized" with 0 files and ``nobody`` (no ``~``) failed while its upstream steps showed
it materialized, and neither could be removed. Every run now refuses such keys before any work,
so nothing is materialized for them, with one line naming what is wrong and the known tenants;
``memory-pipeline partitions --prune`` and the workspace sensor remove them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import dagster as dg

from memory_pipeline.orchestration.partitions import SESSION_TENANTS_PARTITION, TENANTS_PARTITION
from memory_pipeline.tenancy import InvalidTenantError, Tenant, UnknownTenantError, known_tenant

TENANT_PARTITION_SETS = (TENANTS_PARTITION, SESSION_TENANTS_PARTITION)
PRUNE_HINT = "remove stale partitions with 'memory-pipeline partitions --prune'"


def key_problem(root: str | Path, key: str, teams: Mapping[str, str] = {}) -> str | None:
    """Why ``key`` names no tenant of the workspace under ``root``, or None when it does."""
    try:
        tenant = Tenant.from_key(key)
        known_tenant(root, tenant.agent_id, tenant.user_id, teams)
    except (InvalidTenantError, UnknownTenantError) as exc:
        return str(exc)
    return None


def require_known_tenants(
    root: str | Path,
    keys: Iterable[str],
    teams: Mapping[str, str] = {},
    still_stored: Callable[[str], bool] = lambda key: False,
) -> None:
    """Raise ``dg.Failure`` (one line per bad key, at most five) unless every key names a tenant
    of the workspace. ``still_stored(key)``: a well-formed key whose folder is gone but whose data
    is still stored may run, so that the run removes that data."""
    problems = {}
    for key in keys:
        why = key_problem(root, key, teams)
        if why and not (_well_formed(key) and still_stored(key)):
            problems[key] = why
    if problems:
        shown = "; ".join(f"{key}: {why}" for key, why in sorted(problems.items())[:5])
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise dg.Failure(
            description=f"{len(problems)} partition(s) name no tenant of the workspace: {shown}{more}; {PRUNE_HINT}",
            metadata={"unknown_partitions": sorted(problems)},
        )


def _well_formed(key: str) -> bool:
    try:
        Tenant.from_key(key)
    except InvalidTenantError:
        return False
    return True


def stale_partitions(
    instance: dg.DagsterInstance,
    root: str | Path,
    teams: Mapping[str, str] = {},
    still_stored: Callable[[str], bool] = lambda key: False,
) -> dict[str, dict[str, str]]:
    """{partition set: {key: why}} of the tenant partitions of ``instance`` that name no tenant of
    the workspace and hold no stored data."""
    stale: dict[str, dict[str, str]] = {}
    for name in TENANT_PARTITION_SETS:
        for key in instance.get_dynamic_partitions(name):
            why = key_problem(root, key, teams)
            if why and not (_well_formed(key) and still_stored(key)):
                stale.setdefault(name, {})[key] = why
    return stale


def workspace_partitions(root: str | Path) -> dict[str, list[str]]:
    """{partition set: keys} of the tenants the workspace holds, as the workspace sensor registers
    them: every tenant, and the ones with session transcripts as session tenants."""
    from memory_pipeline.sources.workspace import KIND_SESSIONS, scan_workspace

    scan = scan_workspace(root)
    return {
        TENANTS_PARTITION: sorted(t.key for t in scan.files),
        SESSION_TENANTS_PARTITION: sorted(t.key for t, files in scan.files.items() if any(f.kind == KIND_SESSIONS for f in files)),
    }


def remove_partitions(instance: dg.DagsterInstance, stale: Mapping[str, Iterable[str]]) -> int:
    """Delete each key of ``stale`` ({partition set: keys}); returns how many were deleted."""
    removed = 0
    for name, keys in stale.items():
        for key in keys:
            instance.delete_dynamic_partition(name, key)
            removed += 1
    return removed
