"""Data checks of consolidation, reported with the asset that writes the rows they check."""

from __future__ import annotations

import dagster as dg

from memory_pipeline.consolidation.store import ConsolidationStore
from memory_pipeline.store.tables import EPISODES
from memory_pipeline.tenancy import Tenant

EPISODES_CHECK = "episodes_unique_and_embedded"


def episodes_check(store: ConsolidationStore, tenants: list[Tenant]) -> dg.AssetCheckResult:
    """One episode per session, each with its vector, for these tenants."""
    duplicates, missing = [], []
    for tenant in tenants:
        rows = store.episode_rows(tenant.key, columns=["session_id", "source_id", "vector"]) if store.has(EPISODES) else None
        if rows is None or rows.height == 0:
            continue
        duplicates += rows.filter(rows["session_id"].is_duplicated())["session_id"].unique().to_list()
        missing += rows.filter(rows["vector"].is_null())["source_id"].to_list()
    return dg.AssetCheckResult(
        check_name=EPISODES_CHECK,
        passed=not duplicates and not missing,
        metadata={"sessions_with_two_episodes": duplicates[:20], "episodes_without_vector": missing[:20]},
    )
