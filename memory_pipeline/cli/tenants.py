"""Which tenants a command may touch: only ones the workspace holds (``tenancy.known_tenant``).

A typo must not become a tenant: ``-a nosuch`` once indexed "1 tenant" and left a permanent
partition, and a search for an unknown agent answered nothing, silently.
"""

from __future__ import annotations

from collections.abc import Sequence

from memory_pipeline.cli.app import BadInput
from memory_pipeline.tenancy import GLOBAL_USER, Tenant, UnknownTenantError, known_tenant, validate_id

__all__ = ["GLOBAL_USER", "require_tenant", "select_tenants"]

HINT = "(list them with 'memory-pipeline tenants')"


def _settings():
    from memory_pipeline.config import get_settings

    return get_settings()


def require_tenant(agent: str, user: str | None) -> tuple[str, str]:
    """``(agent, user)`` if the workspace holds that tenant, else BadInput naming the known ones."""
    settings = _settings()
    try:
        tenant = known_tenant(settings.root, agent, user, settings.teams)
    except UnknownTenantError as exc:
        raise BadInput(str(exc)) from None
    return tenant.agent_id, tenant.user_id


def select_tenants(agents: Sequence[str] | None, users: Sequence[str] | None, every: bool) -> list[str]:
    """Tenant keys of the workspace for ``-a``/``-u`` (repeatable) or ``--all`` (also: neither)."""
    agents, users = list(agents or []), list(users or [])
    if every and (agents or users):
        raise BadInput("--all selects every tenant: give it alone, or name tenants with --agent/--user")
    for agent in agents:
        validate_id(agent, "agent id")
    for user in users:
        validate_id(user, "user id")
    root = _settings().root
    tenants = [Tenant.from_key(key) for key in _discover(root)]
    if not tenants:
        raise BadInput(
            f"no tenants under {root}: expected <agent>/MEMORY.md, <agent>/users/<user>/ or "
            "<agent>/sessions/<user>/ (set MEMORY_PIPELINE_ROOT to the workspace)"
        )
    present_agents = sorted({t.agent_id for t in tenants})
    for agent in agents:
        if agent not in present_agents:
            raise BadInput(f"unknown agent {agent!r}: known agents: {', '.join(present_agents)} {HINT}")
    chosen = [t for t in tenants if not agents or t.agent_id in agents]
    present_users = sorted({t.user_id for t in chosen})
    for user in users:
        if user not in present_users:
            raise BadInput(f"unknown user {user!r}: known users of the chosen agents: {', '.join(present_users)} {HINT}")
    return [t.key for t in chosen if not users or t.user_id in users]


def _discover(root: str) -> list[str]:
    from memory_pipeline.sources.workspace import scan_workspace

    return [t.key for t in scan_workspace(root).tenants]
