"""The MCP server as an agent drives it: a process on a private workspace, driven by the official
MCP client over stdio."""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from memory_pipeline.embedding import HashEmbedder
from memory_pipeline.memories.operations import TypedMemories
from memory_pipeline.tenancy import Tenant
from memory_pipeline_tests.helpers import REPO, copy_sample


def mcp_environment(base: Path) -> dict[str, str]:
    """A copy of the sample workspace, typed memories of carol, the hashing embedder and a team."""
    sample_root = base / "agents"
    copy_sample(sample_root)
    lance_uri = str(base / "lancedb")
    soon = datetime.now(UTC) + timedelta(days=2)
    typed = TypedMemories.open(lance_uri, HashEmbedder())
    carol = Tenant("research-assistant", "carol")
    rows = [
        typed.row(carol, "fact", "Emma's birthday is March 14", happens_at=datetime(2027, 3, 14, 5, tzinfo=UTC)),
        typed.row(carol, "preference", "Prefers concise answers, no preamble"),
        typed.row(carol, "todo", "Ask Jonah whether the magazine pays for photos", happens_at=soon),
    ]
    # Enough memories naming Jonah that an unbounded answer would be far over the size cap.
    rows += [typed.row(carol, "observation", f"Jonah mentioned chapter {n} of the Meridian draft again, " + "at length " * 60)
             for n in range(60)]
    typed.embed_rows(rows)
    typed.store.upsert_memories(rows)
    typed.store.ensure_fts_index()
    return {
        **os.environ,
        "MEMORY_PIPELINE_ROOT": str(sample_root),
        "MEMORY_PIPELINE_LANCEDB_URI": lance_uri,
        "MEMORY_PIPELINE_EMBEDDER": "hash",
        "MEMORY_PIPELINE_TEAMS": json.dumps({"research-intern": "research-assistant"}),
    }


def run_session(env: dict, agent: str, user: str, calls: list, extra: list[str] = ()) -> tuple[dict, list]:
    """Start the server, list its tools, make the calls; returns ({name: tool}, [(is_error, text)])."""

    async def main():
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "memory_pipeline.mcp_server", "--agent", agent, "--user", user, *extra],
            env=env,
            cwd=str(REPO),
        )
        with open(os.devnull, "w") as devnull:
            async with stdio_client(params, errlog=devnull) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    tools = (await session.list_tools()).tools
                    names = {t.name: t for t in tools}
                    answers = []
                    for name, args in calls:
                        if callable(args):  # arguments that depend on an earlier answer
                            args = args(answers)
                        result = await session.call_tool(name, args)
                        answers.append((result.is_error, result.content[0].text))
                    return names, answers

    return anyio.run(main)
