"""The MCP server, driven by the official MCP client over stdio as an agent would drive it.

Proves: an LLM can use the tools well. The server runs as its own process (``python -m
memory_pipeline.mcp_server``) on a private workspace and LanceDB folder with the hashing
embedder. The tests cover the tool list (every parameter described, closed sets as enums, numbers
bounded, unknown arguments refused by the schema), a write and reads through the typed tools,
compact results under their size cap, a team member's refused write, and bad arguments answered
with one-line error results that name the argument (and, for an unknown one, the accepted ones),
never a traceback or a server path, and a server started for a tenant the workspace does not hold
refused with one line.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from memory_pipeline.mcp_tools import MAX_RESULT_CHARS, MEMORY_KEYS, SEARCH_KEYS
from memory_pipeline_tests.helpers import REPO
from memory_pipeline_tests.helpers.mcp import run_session

TOOLS = {
    "memory_search", "memory_get", "memory_graph_recall", "memory_graph_query", "memory_graph_store",
    "memory_graph_update", "memory_graph_forget", "memory_graph_skip", "knowledge_graph_search", "memory_bulletin",
    "memory_context",
    "memory_expand", "memory_grep",
}


def _stored_id(answers, index: int) -> str:
    return json.loads(answers[index][1])["id"]


READS = [
    ("memory_graph_recall", {"query": "when is Emma's birthday", "k": 1}),  # k: the former name of limit
    ("memory_graph_query", {"memory_type": "todo", "happens_within": "7d", "sort_by": "scheduled"}),
    ("memory_graph_store", {"memory_type": "goal", "content": "Finish the Meridian piece before January"}),
    ("memory_graph_query", {"memory_type": "goal"}),
    ("memory_bulletin", {"kind": "memory"}),
    ("memory_get", {"path": "research-assistant/users/carol/MEMORY.md", "from_line": 1, "lines": 1}),
    ("knowledge_graph_search", {"entity": "Emma"}),
    ("memory_get", {"path": "research-assistant/users/carol/MEMORY.md", "from": 1, "lines": 1}),  # the prior art's name
    ("memory_search", {"query": "when is Emma's birthday", "sources": ["facts"], "limit": 2}),
    ("memory_search", {"query": "when is Emma's birthday", "sources": ["facts"], "limit": 1, "debug": True}),
    ("memory_context", {"token_budget": 80}),
]
WRITES = [
    ("memory_graph_store", {"memory_type": "event", "content": "Plant visit on Friday", "confidence": 0.6}),
    ("memory_graph_update", lambda a: {"memory_id": _stored_id(a, len(READS)), "confidence": 0.9, "reason": "confirmed"}),
    ("memory_graph_forget", lambda a: {"memory_id": _stored_id(a, len(READS)), "reason": "visit is done"}),
    ("memory_graph_query", {"memory_type": "event"}),
    ("memory_graph_skip", {"content": "It rained today", "reason": "weather small talk"}),
]
BAD = [
    ("memory_graph_query", {"happens_within": "next week"}),
    ("memory_graph_query", {"max_results": "lots"}),
    ("memory_graph_store", {"memory_type": "mood", "content": "happy"}),
    ("memory_graph_store", {"content": "missing its type"}),
    ("memory_graph_forget", {"memory_id": "../../etc/passwd", "reason": "x"}),
    ("memory_graph_update", {"memory_id": "m_" + "a" * 24, "content": "x"}),
    ("memory_get", {"path": "/etc/passwd"}),
    ("memory_get", {"path": "support-bot/users/alice/MEMORY.md"}),
    ("knowledge_graph_search", {"entity": "Emma", "as_of": "the day after"}),
    ("memory_bulletin", {"kind": "weather"}),
    ("memory_get", {"path": "research-assistant/users/carol/MEMORY.md", "start_line": 2}),
    ("memory_search", {"query": "Emma", "sources": ["notes"]}),
    ("memory_search", {"query": "Emma", "limit": 500}),
    ("memory_get", {"path": "research-assistant/users/carol/" + "n" * 300 + ".md"}),
    ("memory_search", {"query": "Emma", "now": "the day after"}),
]


LARGE = [  # answers that would be far over the size cap without it
    ("knowledge_graph_search", {"entity": "Jonah", "limit": 50}),
    ("memory_graph_query", {"memory_type": "observation", "limit": 100}),
]


@pytest.fixture(scope="module")
def carol(mcp_env):
    """One server for carol, one client session: reads, writes, bad arguments, then large answers."""
    names, answers = run_session(mcp_env, "research-assistant", "carol", READS + WRITES + BAD + LARGE)
    large = answers[len(answers) - len(LARGE) :]
    answers = answers[: len(answers) - len(LARGE)]
    return names, answers[: len(READS)], answers[len(READS) : len(READS) + len(WRITES)], answers[-len(BAD) :], large


def test_tools_read_and_write_the_users_memory(carol):
    names, answers, _, _, _ = carol
    assert set(names) == TOOLS
    assert [text for error, text in answers if error] == []
    recall, todos, stored, goals, bulletin, lines, graph, lines_from, found, found_debug, context = (
        text for _, text in answers)
    assert [m["content"] for m in json.loads(recall)["results"]] == ["Emma's birthday is March 14"]
    assert [m["content"] for m in json.loads(todos)["results"]] == ["Ask Jonah whether the magazine pays for photos"]
    stored = json.loads(stored)
    assert (stored["memory_type"], stored["source"], stored["tenant"]) == ("goal", "live", "research-assistant~carol")
    assert [m["id"] for m in json.loads(goals)["results"]] == [stored["id"]]
    assert "## Preferences\n- Prefers concise answers, no preamble" in bulletin
    assert json.loads(lines)["text"] == json.loads(lines_from)["text"] == "# Carol Mensah"
    memories = json.loads(graph)["memories"]
    assert "Emma's birthday is March 14" in [m["content"] for m in memories]
    assert all(set(m) <= set(MEMORY_KEYS) for m in memories)
    compact, debug = json.loads(found)["results"], json.loads(found_debug)["results"]
    assert compact and compact[0]["citation"].startswith("facts/m_") and "March 14" in compact[0]["snippet"]
    assert set(compact[0]) <= set(SEARCH_KEYS) and {"citation", "source", "score", "snippet"} <= set(compact[0])
    assert debug[0]["citation"] == compact[0]["citation"] and {"parts", "turn_ids", "tenant"} <= set(debug[0])
    assert context.startswith("# Working memory: research-assistant/carol\n\n## Identity and preferences\n- ")
    assert "; facts/m_" in context


def test_update_forget_and_skip_through_tools(carol):
    _, _, answers, _, _ = carol
    assert not any(error for error, _ in answers), answers
    mid = _stored_id(answers, 0)
    assert json.loads(answers[1][1])["confidence"] == 0.9
    assert json.loads(answers[2][1]) == {"id": mid, "forgotten": True, "reason": "visit is done"}
    assert json.loads(answers[3][1])["results"] == []
    assert json.loads(answers[4][1])["skipped"] is True


def test_drill_down_tools_expand_a_citation_and_grep_the_sources(mcp_env):
    """memory_expand and memory_grep: a note line is its own source, a typed memory stored through a
    tool has none; grep finds turns and note lines with citations and dates and refuses a bad
    pattern in one line; a search through the server is in the access log."""
    from memory_pipeline.activation.access_log import flush_spool
    from memory_pipeline.store.base import LanceBase
    from memory_pipeline.store.tables import ACCESS_LOG

    _, answers = run_session(mcp_env, "research-assistant", "carol", [
        ("memory_graph_recall", {"query": "when is Emma's birthday", "limit": 1}),
        ("memory_expand", lambda a: {"citation": "facts/" + json.loads(a[0][1])["results"][0]["id"]}),
        ("memory_expand", {"citation": "research-assistant/users/carol/MEMORY.md#L19", "all_levels": True}),
        ("memory_grep", {"pattern": "meridian review", "ignore_case": True, "limit": 2}),
        ("memory_grep", {"pattern": "(Jonah"}),
        ("memory_search", {"query": "when is Emma's birthday", "sources": ["facts"], "limit": 1}),
    ])
    assert [error for error, _ in answers] == [False, False, False, False, True, False]
    fact, note, found = (json.loads(text) for _, text in answers[1:4])
    assert (fact["kind"], fact["text"], fact["sources"]) == ("typed_memory", "Emma's birthday is March 14", [])
    assert note == {"citation": "research-assistant/users/carol/MEMORY.md#L19", "kind": "note_lines",
                    "text": "- **Jonah Pierce** — her editor at *Meridian Review*.", "when": note["when"], "sources": []}
    assert [(m["citation"], m["kind"], m["when"]) for m in found["results"]] == [
        ("research-assistant/sessions/carol/sess-20261031-cm01.jsonl#L1", "turn", "2026-10-31 15:20 UTC"),
        ("research-assistant/sessions/carol/sess-20261110-cm02.jsonl#L7", "turn", "2026-11-10 19:11 UTC")]
    assert answers[4][1] == "Error executing tool memory_grep: bad regular expression '(Jonah': missing ) at position 6"
    cited = json.loads(answers[5][1])["results"][0]["citation"]
    assert flush_spool(mcp_env["MEMORY_PIPELINE_LANCEDB_URI"]) >= 1  # the server spools its events beside the tables
    log = LanceBase(mcp_env["MEMORY_PIPELINE_LANCEDB_URI"]).read(ACCESS_LOG, columns=["unit", "event", "channel"])
    assert {"unit": cited, "event": "returned", "channel": "mcp_search"} in log.to_dicts()


def test_a_team_members_server_reads_its_leader_and_refuses_writes(mcp_env):
    _, answers = run_session(mcp_env, "research-intern", "carol", [
        ("memory_graph_store", {"memory_type": "fact", "content": "Anything at all"}),
        ("memory_graph_forget", {"memory_id": "m_" + "0" * 24, "reason": "x"}),
        ("memory_graph_query", {"memory_type": "preference"}),
    ])
    (store_err, store_text), (forget_err, forget_text), (query_err, query_text) = answers
    assert store_err and "memory is read-only for team members" in store_text
    assert forget_err and "memory is read-only for team members" in forget_text
    assert not query_err and json.loads(query_text)["results"][0]["content"] == "Prefers concise answers, no preamble"


def test_read_only_flag_refuses_writes_for_anyone(mcp_env):
    _, answers = run_session(mcp_env, "research-assistant", "carol", [
        ("memory_graph_skip", {"content": "x y z", "reason": "r"}),
    ], extra=["--read-only"])
    assert answers[0][0] and "read-only" in answers[0][1]


def test_bad_arguments_get_clear_errors_not_tracebacks(carol):
    _, _, _, answers, _ = carol
    expected = [
        "not a duration", "limit: Input should be a valid integer", "memory_type: Input should be 'identity'",
        "memory_type: Field required", "not a memory id", "no memory", "absolute path", "not in the memory",
        "not ISO-8601", "kind: Input should be 'memory' or 'context'",
        "memory_get: unknown argument(s) 'start_line'; accepted: path, from_line, lines, from (= from_line)",
        "sources.0: Input should be 'memory', 'sessions', 'episodes' or 'facts'",
        "limit: Input should be less than or equal to 50", "cannot be read: file name too long",
        "now: reference time 'the day after' is not a date: use ISO-8601",
    ]
    for (is_error, text), fragment in zip(answers, expected, strict=True):
        assert is_error, text
        assert fragment in text
        assert "\n" not in text and "Traceback" not in text
        assert env_paths_absent(text)


def env_paths_absent(text: str) -> bool:
    return "/tmp" not in text and "/mcp" not in text


def test_every_parameter_is_described_closed_sets_are_enums_and_numbers_bounded(carol):
    names, _, _, _, _ = carol
    enums = {"memory_type", "sort_by", "kind", "sources"}
    seen_enums, bounded = set(), set()
    for tool in names.values():
        schema = tool.input_schema
        assert tool.description and schema["additionalProperties"] is False, tool.name
        assert schema["properties"], tool.name
        for name, prop in schema["properties"].items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"
            text = json.dumps(prop)
            if name in enums:
                assert '"enum"' in text, f"{tool.name}.{name} is not an enum"
                seen_enums.add(name)
            if prop.get("type") == "integer" or '"integer"' in text:
                assert '"minimum"' in text and ("maximum" in text or name == "from_line"), f"{tool.name}.{name}"
                bounded.add(name)
    assert seen_enums == enums and {"limit", "lines", "per_section"} <= bounded


def test_results_stay_under_their_size_cap(carol):
    answers = carol[-1]
    for is_error, text in answers:
        assert not is_error, text
        assert len(text) <= MAX_RESULT_CHARS + 2_000, text[:300]  # the cap is on compact JSON; the text is indented
        assert json.loads(text)["truncated"] is True, text[:300]
    kept = json.loads(answers[1][1])
    assert 0 < len(kept["results"]) < 60 and "more left out" in kept["note"]


@pytest.mark.parametrize(
    ("agent", "user", "message"),
    [
        ("research-assistnat", "carol", "error: unknown agent 'research-assistnat'"),
        ("research-assistant", "karol", "error: unknown user 'karol' of agent 'research-assistant'"),
        ("../etc", "carol", "error: invalid agent id '../etc'"),
    ],
)
def test_the_server_refuses_a_tenant_the_workspace_does_not_hold(mcp_env, agent, user, message):
    """A typo in --agent or --user ends the server with one line and exit 2, before any tool runs."""
    done = subprocess.run(
        [sys.executable, "-m", "memory_pipeline.mcp_server", "--agent", agent, "--user", user],
        env=mcp_env, cwd=REPO, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert done.stderr.startswith(message), done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
