"""Whose memory a recall may read: the user's own, the agent-wide pool, and a team leader's.

An agent reads, for one user: that user's tenant (boosted), then the agent-wide tenant. A team
member agent (``Settings.teams``: member -> leader) also reads its leader's memory for the same
user and the leader's agent-wide memory, but only as a fallback when its own scopes have no hit,
and it may never write there (``is_read_only``). Nothing else is ever in scope.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

from memory_pipeline.config import RecallConfig, Settings
from memory_pipeline.tenancy import GLOBAL_USER, Tenant, validate_id

READ_ONLY_MESSAGE = "memory is read-only for team members"


class ReadOnlyError(PermissionError):
    """A write refused: a team member's memory belongs to its leader (or the reader was opened read-only)."""

    def __init__(self, message: str = READ_ONLY_MESSAGE):
        super().__init__(message)


OWN_USER, AGENT_WIDE, LEADER_USER, LEADER_WIDE = range(4)
"""Scope ranks: a lower rank wins when two scopes hold the same text."""


@dataclass(frozen=True)
class Scope:
    tenant: Tenant
    rank: int
    boost: float
    fallback: bool  # read only when the non-fallback scopes have no hit

    @property
    def key(self) -> str:
        return self.tenant.key


def team_leader(agent: str, settings: Settings) -> str | None:
    leader = settings.teams.get(agent)
    return validate_id(leader, "team leader agent id") if leader and leader != agent else None


def is_read_only(agent: str, settings: Settings | None = None) -> bool:
    """True for a team member: its memory lives with its leader, who alone writes it."""
    if settings is None:
        from memory_pipeline.config import get_settings

        settings = get_settings()
    return team_leader(validate_id(agent, "agent id"), settings) is not None


def recall_scopes(
    agent: str, user: str | None, settings: Settings, config: RecallConfig | None = None
) -> list[Scope]:
    """The tenants one (agent, user) reads, best first; ``user=None`` reads the agent-wide pool."""
    config = config or settings.recall
    user = user or GLOBAL_USER
    scopes: list[Scope] = []
    if user != GLOBAL_USER:
        scopes.append(Scope(Tenant(agent, user), OWN_USER, config.user_boost, False))
    scopes.append(Scope(Tenant(agent, GLOBAL_USER), AGENT_WIDE, 1.0, False))
    leader = team_leader(agent, settings)
    if leader:
        if user != GLOBAL_USER:
            scopes.append(Scope(Tenant(leader, user), LEADER_USER, config.leader_boost, True))
        scopes.append(Scope(Tenant(leader, GLOBAL_USER), LEADER_WIDE, config.leader_boost, True))
    return scopes


def path_tenant(path: str) -> Tenant | None:
    """The tenant owning a workspace-relative path, by the layout of DESIGN §2, or None.

    ``<agent>/users/<user>/...`` and ``<agent>/sessions/<user>/...`` belong to (agent, user);
    any other file under ``<agent>/`` to the agent-wide tenant.
    """
    parts = PurePosixPath(path).parts
    if len(parts) < 2:
        return None
    try:
        if parts[1] in ("users", "sessions"):
            if len(parts) < 4:
                return None
            return Tenant(parts[0], parts[2])
        return Tenant(parts[0], GLOBAL_USER)
    except ValueError:
        return None
