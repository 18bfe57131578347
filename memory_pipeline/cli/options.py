"""The flags every command shares, declared once so one idea has one name everywhere.

- ``-a/--agent`` and ``-u/--user`` name a tenant. Commands that serve one tenant take one of each
  (``--user`` defaults to the agent-wide memory, ``_global``); commands that run a pipeline take
  them repeatable, or ``--all`` for every tenant.
- ``-k/--limit`` is how many results; ``-t/--type`` a typed memory's type; ``--json`` prints JSON
  on stdout and nothing else.
"""

from __future__ import annotations

import typer


def _utf8(value):
    """Text arguments must be valid UTF-8: a terminal can pass bytes that are not."""
    for item in value if isinstance(value, (list, tuple)) else [value]:
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise typer.BadParameter("not valid UTF-8 text: re-type it or fix the terminal's encoding") from None
    return value


def text_argument(help: str, default=...):
    return typer.Argument(default, help=help, callback=_utf8)


def text_option(default, *names: str, help: str):
    return typer.Option(default, *names, help=help, callback=_utf8)


AGENT = typer.Option(..., "--agent", "-a", help="Agent id.", callback=_utf8)
USER = typer.Option("_global", "--user", "-u", help="User id (default: the agent-wide memory, _global).", callback=_utf8)
AGENTS = typer.Option(None, "--agent", "-a", help="Only this agent's tenants; repeatable.", callback=_utf8)
USERS = typer.Option(None, "--user", "-u", help="Only this user's tenants (_global: agent-wide); repeatable.", callback=_utf8)
ALL = typer.Option(False, "--all", help="Every tenant of the workspace (the default when no --agent or --user is given).")
JSON = typer.Option(False, "--json", help="Print JSON on stdout, nothing else.")
MEMORY_TYPE_HELP = "identity, preference, fact, event, decision, goal, routine, observation, todo or anomaly"


MEMORIES_MAX_RESULTS = 100
"""The most typed memories ``memories search`` or ``memories query`` returns
(``memories.query.MAX_RESULTS``; a test keeps the two equal, this module imports nothing heavy)."""


def limit(default: int | None, help: str = "How many results.", maximum: int = 1000):
    return typer.Option(default, "--limit", "-k", min=1, max=maximum, help=help)
