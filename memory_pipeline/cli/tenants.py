"""Which tenants a command may touch: only ones the workspace holds.

A typo must not become a tenant: ``-a nosuch`` once indexed "1 tenant" and left a permanent
partition, and a search for an unknown agent answered nothing, silently. A tenant is known when
its folder exists under the workspace root (``<agent>/`` for the agent-wide memory,
``<agent>/users/<user>/`` or ``<agent>/sessions/<user>/`` for a user); a team member agent is
known through its leader's folders, which it reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from memory_pipeline.cli.app import BadInput

GLOBAL_USER = "_global"
HINT = "(list them with 'memory-pipeline tenants')"


def _validate(agent: str, user: str) -> None:
    from memory_pipeline.tenancy import Tenant

    Tenant(agent, user)  # InvalidTenantError: one line, exit 2


def _settings():
    from memory_pipeline.config import get_settings

    return get_settings()


def known_agents(root: Path) -> list[str]:
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))


def known_users(root: Path, agent: str) -> list[str]:
    names = {GLOBAL_USER}
    for folder in ("users", "sessions"):
        base = root / agent / folder
        if base.is_dir():
            names |= {p.name for p in base.iterdir() if p.is_dir() and not p.name.startswith(".")}
    return sorted(names)


def require_tenant(agent: str, user: str | None) -> tuple[str, str]:
    """``(agent, user)`` if the workspace holds that tenant, else BadInput naming the known ones."""
    user = user or GLOBAL_USER
    _validate(agent, user)
    settings = _settings()
    root = Path(settings.root)
    homes = [agent] + ([settings.teams[agent]] if agent in settings.teams else [])
    if not any((root / home).is_dir() for home in homes):
        agents = ", ".join(known_agents(root)) or "none"
        raise BadInput(f"unknown agent {agent!r}: no folder {agent}/ under {settings.root}; known agents: {agents}")
    if user != GLOBAL_USER and not any(user in known_users(root, home) for home in homes):
        users = ", ".join(u for home in homes for u in known_users(root, home))
        raise BadInput(
            f"unknown user {user!r} of agent {agent!r}: known users: {users} "
            f"(a user is added by creating {agent}/users/{user}/ under the workspace root)"
        )
    return agent, user


def select_tenants(agents: Sequence[str] | None, users: Sequence[str] | None, every: bool) -> list[str]:
    """Tenant keys of the workspace for ``-a``/``-u`` (repeatable) or ``--all`` (also: neither)."""
    from memory_pipeline.tenancy import Tenant, validate_id

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
