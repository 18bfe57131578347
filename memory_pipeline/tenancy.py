"""Tenants: an (agent_id, user_id) pair and its Dagster partition key.

Ids are restricted to a safe alphabet so that a tenant id can never name a path outside the
workspace root, and so that the partition key stays readable in the Dagster UI.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from zoneinfo import ZoneInfo

GLOBAL_USER = "_global"
"""The user id of an agent's agent-wide memory (``<agent>/MEMORY.md``, ``<agent>/memory/``)."""

_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_KEY_SEP = "~"


class InvalidTenantError(ValueError):
    """An agent or user id that is empty, too long, or not of the safe alphabet."""


class UnknownTenantError(ValueError):
    """A well-formed agent or user id the workspace holds no folder for."""


def validate_id(value: str, what: str = "id") -> str:
    """Return ``value`` if it is a safe agent or user id, else raise InvalidTenantError.

    Allowed: 1-64 characters of ASCII letters, digits, ``_``, ``.`` and ``-``, starting with a
    letter or digit, and never ``..``. The reserved ``_global`` user id is also allowed.
    """
    if value == GLOBAL_USER:
        return value
    if not isinstance(value, str) or not _ID_RE.match(value) or ".." in value:
        raise InvalidTenantError(
            f"invalid {what} {value!r}: use 1-64 ASCII letters, digits, '_', '.' or '-', "
            "starting with a letter or digit (no '/', no '..')"
        )
    return value


@dataclass(frozen=True, order=True)
class Tenant:
    """Whose memory this is: one agent, and one of its users or the agent-wide scope."""

    agent_id: str
    user_id: str = GLOBAL_USER

    def __post_init__(self) -> None:
        validate_id(self.agent_id, "agent id")
        validate_id(self.user_id, "user id")

    @property
    def key(self) -> str:
        """The Dagster partition key, e.g. ``support-bot~alice``."""
        return f"{self.agent_id}{_KEY_SEP}{self.user_id}"

    @property
    def is_global(self) -> bool:
        return self.user_id == GLOBAL_USER

    @classmethod
    def from_key(cls, key: str) -> "Tenant":
        agent, sep, user = key.partition(_KEY_SEP)
        if not sep:
            raise InvalidTenantError(
                f"invalid tenant partition key {key!r}: expected '<agent>{_KEY_SEP}<user>'"
            )
        return cls(agent, user)

    def __str__(self) -> str:
        return self.key


def profile_files(root: str | Path, tenant: Tenant) -> list[Path]:
    """The tenant's own MEMORY.md, in either spelling: its profile, which names its timezone."""
    base = Path(root) / tenant.agent_id
    folder = base if tenant.is_global else base / "users" / tenant.user_id
    return [folder / "MEMORY.md", folder / "memory.md"]


def tenant_tz(root: str | Path, tenant: Tenant) -> ZoneInfo:
    """The timezone the tenant's MEMORY.md names, else UTC."""
    from memory_pipeline.text.dates import tenant_timezone, zone

    return zone(tenant_timezone(profile_files(root, tenant)))


def known_agents(root: Path) -> list[str]:
    """The agents of a workspace: its top-level folders (hidden and ``_`` ones left out)."""
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))


def known_users(root: Path, agent: str) -> list[str]:
    """The users of an agent: its ``users/`` and ``sessions/`` folders named by a valid user id
    (the scan skips the others, with the reason), plus the agent-wide scope."""
    names = {GLOBAL_USER}
    for folder in ("users", "sessions"):
        base = root / agent / folder
        if base.is_dir():
            names |= {p.name for p in base.iterdir() if p.is_dir() and _is_valid_id(p.name)}
    return sorted(names)


def _is_valid_id(name: str) -> bool:
    try:
        validate_id(name)
    except InvalidTenantError:
        return False
    return True


def known_tenant(root: str | Path, agent: str, user: str | None, teams: Mapping[str, str] = {}) -> Tenant:
    """The tenant if the workspace holds it, else UnknownTenantError naming the known ones.

    A typo must not become a tenant (an empty partition, a search that silently answers nothing).
    A tenant is known when its folder exists under the root (``<agent>/`` for the agent-wide
    memory, ``<agent>/users/<user>/`` or ``<agent>/sessions/<user>/`` for a user); a team member
    agent is known through its leader's folders, which it reads.
    """
    tenant = Tenant(agent, user or GLOBAL_USER)  # InvalidTenantError first: a malformed id
    root = Path(root)
    homes = [agent] + ([teams[agent]] if agent in teams else [])
    if not any((root / home).is_dir() for home in homes):
        agents = ", ".join(known_agents(root)) or "none"
        raise UnknownTenantError(f"unknown agent {agent!r}: no folder {agent}/ under {root}; known agents: {agents}")
    if not tenant.is_global and not any(tenant.user_id in known_users(root, home) for home in homes):
        users = ", ".join(u for home in homes for u in known_users(root, home))
        raise UnknownTenantError(
            f"unknown user {tenant.user_id!r} of agent {agent!r}: known users: {users} "
            f"(a user is added by creating {agent}/users/{tenant.user_id}/ under the workspace root)"
        )
    return tenant
