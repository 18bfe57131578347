"""Activation as a ranking feature that only breaks near-ties. Read side: no Dagster, no models.

A candidate's order key is its score times ``1 + MAX_LIFT * u / (u + USE_SCALE)`` for its use
activation ``u`` (``decay.py``: its uses, decayed; being shown does not count): at most
``MAX_LIFT`` (2 %) above its own score; one use today lifts it by 1.6 %, a week of daily use by
1.9 %. So a used unit passes an unused one only when their scores are within 2 % of each other,
and the score itself is untouched: the minimum score, the inject threshold and every reported
figure stay what relevance made them; an irrelevant result is never lifted. Without any activation
(no log yet, or a tenant never recalled) the order is exactly the one of the scores.

Activation changes nightly; a tenant's rows are read once per version of the table.
"""

from __future__ import annotations

from collections.abc import Iterable

from memory_pipeline.activation.decay import COOL_TIER, HOT_TIER, WARM_TIER
from memory_pipeline.store.tables import ACTIVATION

MAX_LIFT = 0.02
"""3 % lifted a used result past the right one of another question once in 383 LoCoMo dev
questions after a round of use (``eval locomo --after-use``: R@1 0.514 -> 0.512); 2 % did not,
and still decides 99-100 % of the near-ties of ``bench/activation.py``."""
USE_SCALE = 0.25


def lift(use_activation: float) -> float:
    """The factor on a score of a unit with this use activation: 1.0 (never used) to 1 + MAX_LIFT."""
    return 1.0 + MAX_LIFT * use_activation / (use_activation + USE_SCALE) if use_activation > 0 else 1.0


def activation_of(cache, tenants: Iterable[str]) -> dict[tuple[str, str], tuple[float, str]]:
    """(tenant, row id) -> (use activation, tier) for the rows of ``tenants`` that have one, read
    through recall's tenant cache (``recall.sources.TenantCache``): a tenant's rows are read once
    per version of the table, and on a local folder kept beside the indices, so a new process
    answers without LanceDB while the table has not moved."""
    if ACTIVATION.name not in cache.table_names():
        return {}
    out = {}
    for tenant in sorted(set(tenants)):
        rows = cache.read_tenant(ACTIVATION.name, tenant, ["row_id", "use_activation", "tier"]).to_pylist()
        out.update({(tenant, r["row_id"]): (r["use_activation"], r["tier"]) for r in rows})
    return out


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
