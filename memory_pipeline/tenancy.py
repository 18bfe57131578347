"""Tenants: an (agent_id, user_id) pair and its Dagster partition key.

Ids are restricted to a safe alphabet so that a tenant id can never name a path outside the
workspace root, and so that the partition key stays readable in the Dagster UI.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

GLOBAL_USER = "_global"
"""The user id of an agent's agent-wide memory (``<agent>/MEMORY.md``, ``<agent>/memory/``)."""

_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_KEY_SEP = "~"


class InvalidTenantError(ValueError):
    """An agent or user id that is empty, too long, or not of the safe alphabet."""


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
