"""``get`` reads what search cites for typed memories (``facts/<id>``) and episodes
(``episodes/<id>``): their text, from the tables typed memories and consolidation write, through the
same scopes as a file read (own user, agent-wide, a team leader's for a member).

A tenant never reads another tenant's typed memory or episode by its id, and the refusal is
worded exactly as for an id that does not exist: a typed memory's id is a hash of its tenant and
content, so an answer that differed would confirm a guessed fact. File citations keep working
beside them; the MCP ``memory_get`` tool serves the same citations to an agent.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_pipeline.consolidation.assets import episodic_summaries
from memory_pipeline.embedding import HashEmbedder
from memory_pipeline.memories.operations import TypedMemories
from memory_pipeline.recall.get import GetError, get
from memory_pipeline.recall.search import search
from memory_pipeline.tenancy import Tenant
from memory_pipeline_tests.helpers import make_resources, write
from memory_pipeline_tests.helpers.consolidation import consolidate, jsonl, say, store_for
from memory_pipeline_tests.helpers.mcp import run_session
from memory_pipeline_tests.helpers.recall import build_workspace, recall_settings

ALICE, BOB = Tenant("support-bot", "alice"), Tenant("support-bot", "bob")
AGENT_WIDE = Tenant("support-bot", "_global")
LAPTOP = "Alice's work laptop is a ThinkPad X1 Carbon with the serial TPX-4471"
REFUNDS = "Refunds above 500 euros need a manager's approval"


@pytest.fixture
def workspace(tmp_path):
    """The recall workspace, typed memories of alice, bob and the agent-wide scope, and settings
    (with the team helper-bot -> support-bot) that read them."""
    root, lance_uri = tmp_path / "agents", str(tmp_path / "lancedb")
    build_workspace(root)
    typed = TypedMemories.open(lance_uri, HashEmbedder())
    stored = {
        "alice": typed.store_memory(ALICE, "fact", LAPTOP),
        "bob": typed.store_memory(BOB, "preference", "Bob wants every answer in French"),
        "wide": typed.store_memory(AGENT_WIDE, "decision", REFUNDS),
    }
    return root, lance_uri, recall_settings(root, lance_uri), stored


def read(path: str, tenant: Tenant, settings, **kwargs):
    return get(path, agent=tenant.agent_id, user=tenant.user_id, settings=settings, **kwargs)


def test_a_fact_citation_from_search_reads_the_memory(workspace):
    _, lance_uri, settings, stored = workspace
    hits = search("which laptop does alice use", "support-bot", "alice", store=lance_uri, embedder=HashEmbedder(),
                  settings=settings, sources=["facts"], min_score=0)
    assert hits[0].citation == f"facts/{stored['alice']['id']}"

    got = read(hits[0].citation, ALICE, settings)
    assert got.to_dict() == {
        "path": hits[0].citation, "tenant": ALICE.key, "start_line": 1, "end_line": 1, "total_lines": 1,
        "text": LAPTOP, "citation": hits[0].citation, "when": hits[0].when,
    }
    assert got.when and got.when.startswith("20")  # when it was stored, as search shows it


def test_agent_wide_and_leader_facts_are_readable(workspace):
    _, _, settings, stored = workspace
    path = f"facts/{stored['wide']['id']}"
    assert read(path, ALICE, settings).text == REFUNDS
    leader = read(path, Tenant("helper-bot", "alice"), settings)  # a team member reads its leader's memory
    assert (leader.tenant, leader.text) == (AGENT_WIDE.key, REFUNDS)
    assert get(path, agent="support-bot", settings=settings).text == REFUNDS  # the agent-wide reader


@pytest.mark.parametrize(
    "reader, owner",
    [
        (BOB, "alice"),  # another user of the same agent
        (Tenant("research-bot", "alice"), "alice"),  # the same user name under another agent
        (Tenant("research-bot", "alice"), "wide"),  # another agent's agent-wide memory
        (AGENT_WIDE, "alice"),  # the agent-wide reader does not read its users
        (Tenant("helper-bot", "bob"), "alice"),  # a team member, for another user
    ],
)
def test_another_tenants_fact_reads_as_an_id_that_does_not_exist(workspace, reader, owner):
    _, _, settings, stored = workspace
    real, made_up = stored[owner]["id"], "m_" + "0" * 24
    with pytest.raises(GetError) as taken:
        read(f"facts/{real}", reader, settings)
    with pytest.raises(GetError) as missing:
        read(f"facts/{made_up}", reader, settings)
    assert str(taken.value) == str(missing.value).replace(made_up, real)
    assert "no typed memory" in str(taken.value) and LAPTOP not in str(taken.value)


def test_lines_of_a_fact_and_bad_ranges(workspace):
    _, _, settings, stored = workspace
    typed = TypedMemories.open(settings.lancedb_uri, HashEmbedder())
    steps = typed.store_memory(ALICE, "routine", "Restart the worker\nClear the queue\nPage the on-call")
    got = read(f"facts/{steps['id']}#L2-L3", ALICE, settings)
    assert (got.lines, got.total_lines, got.citation) == (["Clear the queue", "Page the on-call"], 3, f"facts/{steps['id']}#L2-L3")
    with pytest.raises(GetError, match="past its end"):
        read(f"facts/{stored['alice']['id']}", ALICE, settings, from_line=5)
    with pytest.raises(GetError, match="from_line must be 1 or more"):
        read(f"facts/{stored['alice']['id']}", ALICE, settings, from_line=0)


def test_file_citations_still_read_files(workspace):
    _, _, settings, _ = workspace
    got = read("support-bot/users/alice/MEMORY.md#L3-L3", ALICE, settings)
    assert (got.lines, got.citation) == (["Alice prefers to be contacted by email, never by phone."],
                                         "support-bot/users/alice/MEMORY.md#L3-L3")


def test_no_table_yet_is_a_missing_id(tmp_path):
    root = tmp_path / "agents"
    build_workspace(root)
    settings = recall_settings(root, str(tmp_path / "never-written"))
    with pytest.raises(GetError, match="no episode 'episodes/abc123'"):
        read("episodes/abc123", ALICE, settings)
    assert not (tmp_path / "never-written").exists()  # a read creates nothing


def test_an_episode_citation_reads_its_summary_for_its_tenant_only(tmp_path, instance):
    root, lance_uri = tmp_path / "agents", str(tmp_path / "lancedb")
    build_workspace(root)
    for user in ("alice", "bob"):
        write(root, f"support-bot/sessions/{user}/s2.jsonl", jsonl(
            say("user", f"Please move {user}'s invoices to the finance mailbox from December.", "2026-11-05T09:00:00Z"),
            say("assistant", "Done: invoices now go to the finance mailbox from December.", "2026-11-05T09:00:30Z"),
            completed="2026-11-05T09:05:00Z",
        ))
        consolidate(instance, make_resources(root, lance_uri), "2026-11-05", tenant=f"support-bot~{user}",
                    assets=[episodic_summaries])
    episodes = {u: store_for(lance_uri).episode_rows(f"support-bot~{u}", "session_id = 's2'").row(0, named=True)
                for u in ("alice", "bob")}
    settings = recall_settings(root, lance_uri)

    got = read(f"episodes/{episodes['alice']['id']}", ALICE, settings)
    assert (got.tenant, got.text, got.citation) == (ALICE.key, episodes["alice"]["summary"], f"episodes/{episodes['alice']['id']}")
    with pytest.raises(GetError, match="no episode") as taken:
        read(f"episodes/{episodes['alice']['id']}", BOB, settings)
    assert episodes["alice"]["summary"] not in str(taken.value)
    assert read(f"episodes/{episodes['bob']['id']}", BOB, settings).text == episodes["bob"]["summary"]


def test_the_mcp_tool_reads_a_fact_and_refuses_another_users(mcp_env):
    """memory_get over MCP: carol's search cites her fact and memory_get reads it; dave, another
    user of the same agent, gets the answer an unknown id gets."""
    _, answers = run_session(mcp_env, "research-assistant", "carol", [
        ("memory_search", {"query": "Emma birthday", "k": 10, "min_score": 0}),
        ("memory_get", lambda a: {"path": next(r["citation"] for r in json.loads(a[0][1])["results"] if r["source"] == "facts")}),
    ])
    assert not any(error for error, _ in answers), answers
    cited = json.loads(answers[1][1])
    assert cited["text"] == "Emma's birthday is March 14" and cited["tenant"] == "research-assistant~carol"

    # dave is a user of the workspace (the server refuses to start for one it does not hold)
    (Path(mcp_env["MEMORY_PIPELINE_ROOT"]) / "research-assistant" / "users" / "dave").mkdir(parents=True, exist_ok=True)
    _, refused = run_session(mcp_env, "research-assistant", "dave", [("memory_get", {"path": cited["path"]})])
    assert refused[0][0] and "no typed memory" in refused[0][1] and "Emma" not in refused[0][1]
