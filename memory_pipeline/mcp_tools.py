"""How the MCP tools take arguments and give results, so an LLM uses them well.

- Arguments are checked before a tool runs: an unknown name is refused with an error naming the
  accepted ones (a silently ignored ``start_line`` once returned lines 1-3), aliases from the
  prior art are accepted (``from`` for ``from_line``), and a value of the wrong type or outside
  its enum or bounds gets one line saying which argument and why.
- Results are compact by default and capped in size: a list is cut at ``limit`` items and then at
  ``MAX_RESULT_CHARS`` of JSON (saying so), and errors never name the server's folders.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from pydantic import ValidationError

MAX_RESULT_CHARS = 12_000
"""About 3,000 tokens: one answer must leave room for the conversation (a knowledge-graph search
once answered 18 KB)."""

SEARCH_KEYS = ("citation", "date", "source", "score", "snippet", "superseded", "tier")
"""A search result as the model sees it by default; ``superseded`` only when a later statement replaced it;
``tier`` (hot, warm, cool) how much it was used lately."""
MEMORY_KEYS = ("id", "memory_type", "content", "occurred_at", "happens_at", "confidence", "source", "score")


class CheckedTool(Tool):
    """A tool whose arguments are checked by name, with aliases, before the SDK validates them."""

    aliases: dict[str, str] = {}

    async def run(self, arguments: dict[str, Any], context, convert_result: bool = False) -> Any:
        arguments = check_arguments(self.name, self.parameters, dict(arguments or {}), self.aliases)
        try:
            self.fn_metadata.validate_arguments(arguments)
        except ValidationError as exc:
            raise ToolError(f"{self.name}: {validation_line(exc)}") from None
        return await super().run(arguments, context, convert_result=convert_result)


def make_tool(fn, *, aliases: dict[str, str] | None = None, **options) -> CheckedTool:
    tool = CheckedTool.from_function(fn, **options)
    tool.aliases = dict(aliases or {})
    tool.parameters["additionalProperties"] = False  # the schema says what run() enforces
    return tool


def check_arguments(name: str, schema: dict, arguments: dict[str, Any], aliases: dict[str, str]) -> dict[str, Any]:
    accepted = list(schema.get("properties", {}))
    for alias, target in aliases.items():
        if alias in arguments:
            if target in arguments:
                raise ToolError(f"{name}: give {target!r} or its alias {alias!r}, not both")
            arguments[target] = arguments.pop(alias)
    unknown = sorted(set(arguments) - set(accepted))
    if unknown:
        also = "".join(f", {alias} (= {target})" for alias, target in aliases.items())
        raise ToolError(
            f"{name}: unknown argument(s) {', '.join(map(repr, unknown))}; accepted: {', '.join(accepted)}{also}"
        )
    return arguments


def validation_line(exc: ValidationError) -> str:
    """Pydantic's errors as one line: which argument, what is wrong, what was given."""
    parts = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(p) for p in error["loc"]) or "arguments"
        given = error.get("input")
        shown = "" if isinstance(given, dict) else f" (got {json.dumps(given, default=str)[:80]})"
        parts.append(f"{where}: {error['msg']}{shown}")
    return "; ".join(parts)


def compact(row: dict, keys: tuple[str, ...], debug: bool) -> dict:
    return dict(row) if debug else {k: row[k] for k in keys if row.get(k) is not None}


def capped_list(items: list, limit: int, **extra: Any) -> dict:
    """``{"results": [...], "truncated": bool}``: at most ``limit`` items and MAX_RESULT_CHARS of JSON."""
    kept = list(items[:limit])
    while kept and len(dump({"results": kept, **extra})) > MAX_RESULT_CHARS:
        kept.pop()
    truncated = len(kept) < len(items)
    out = {"results": kept, "truncated": truncated, **extra}
    if truncated:
        out["note"] = f"{len(items) - len(kept)} more left out (limit {limit}, {MAX_RESULT_CHARS} characters)"
    return out


def capped_text(text: str) -> str:
    if len(text) <= MAX_RESULT_CHARS:
        return text
    return text[: MAX_RESULT_CHARS - 60].rstrip() + f"\n\n[cut at {MAX_RESULT_CHARS} characters]"


def dump(value: Any) -> str:
    return json.dumps(value, default=str, ensure_ascii=False)


def without_server_paths(message: str, settings) -> str:
    """An error as the client may see it: the workspace and index folders by name, not path."""
    for folder, name in ((settings.root, "<workspace>"), (settings.lancedb_uri, "<memory index>")):
        for spelled in {str(folder), str(Path(folder).resolve())}:
            if spelled and spelled not in (".", "/"):
                message = message.replace(spelled.rstrip("/") + "/", "").replace(spelled, name)
    return message
