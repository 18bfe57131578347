"""Tenant isolation: no reader ever receives another tenant's memory, whatever it asks and
however it names things.

The workspace has three agents (one a team member of another), three users each plus the
agent-wide memory; every tenant's notes, transcript and typed memories carry a word only that
tenant has. A hypothesis property draws a reader and a query (mixing tenants' words and noise)
and calls every read API: ``search``, ``inject``, ``get`` (on any tenant's file), and the
typed memories' recall, query, knowledge search and bulletin. The answers may hold only the words of the
tenants the reader may read: its user, its agent-wide memory, and for a team member its leader's.

Crafted ids (``..``, ``/``, empty, 65+ characters, Unicode, NUL, ``~``) are refused by every entry
point with an error naming the bad id; path traversal and symlinks are refused by ``get`` and
never indexed by the L0 scan; one CLI command and one MCP server session show the same at the
edges (the MCP server runs as its own process, as an agent starts it).
"""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from memory_pipeline.config import Settings, get_settings
from memory_pipeline.embedding import HashEmbedder
from memory_pipeline.l0.store import ChunkIndex
from memory_pipeline.memories.operations import TypedMemories
from memory_pipeline.memories.service import MemoryService
from memory_pipeline.orchestration.runs import run_partitioned_job
from memory_pipeline.recall.get import AccessDeniedError, GetError, get
from memory_pipeline.recall.inject import inject
from memory_pipeline.recall.search import search
from memory_pipeline.tenancy import GLOBAL_USER, InvalidTenantError, Tenant
from memory_pipeline_tests.helpers import write

AGENTS = ("alpha", "beta", "gamma")
USERS = ("u1", "u2", "u3")
TEAMS = {"gamma": "alpha"}  # gamma's members read alpha's memory as a fallback
CRAFTED = ["..", "/", "", "a" * 65, "ünïcode", "a/b", "a~b", ".hidden", "-x", "nul\x00", " u1", "u1/../u2", "~"]


def word(tenant: Tenant) -> str:
    return f"zq{tenant.agent_id}x{tenant.user_id.strip('_')}word"


def tenants() -> list[Tenant]:
    return [Tenant(a, u) for a in AGENTS for u in (*USERS, GLOBAL_USER)]


def allowed(agent: str, user: str | None) -> set[str]:
    users = [user, GLOBAL_USER] if user else [GLOBAL_USER]
    keys = {Tenant(agent, u).key for u in users}
    if agent in TEAMS:
        keys |= {Tenant(TEAMS[agent], u).key for u in users}
    return keys


def folder(t: Tenant) -> str:
    return f"{t.agent_id}" if t.is_global else f"{t.agent_id}/users/{t.user_id}"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    base = tmp_path_factory.mktemp("isolation")
    root, uri = base / "agents", str(base / "lancedb")
    for t in tenants():
        w = word(t)
        write(root, f"{folder(t)}/MEMORY.md", f"# Memory\n\nThe project codename is {w}.\n\nI prefer {w} tea.\n")
        write(root, f"{folder(t)}/memory/2026-11-03.md", f"# Notes\n\n- Met Dana about {w} on Monday.\n")
        if not t.is_global:
            lines = [{"role": "user", "content": f"My locker code is {w}, remember it.", "ts": "2026-11-04T09:00:00Z"},
                     {"role": "assistant", "content": f"Noted: {w}.", "ts": "2026-11-04T09:00:10Z"}]
            write(root, f"{t.agent_id}/sessions/{t.user_id}/s1.jsonl", "".join(json.dumps(x) + "\n" for x in lines))
    # Symlinks: into another user's memory, out of the root; neither may be indexed as alice's.
    link_dir = root / "alpha/users/u1/memory"
    (link_dir / "borrowed.md").symlink_to(root / "alpha/users/u2/MEMORY.md")
    (link_dir / "global-copy.md").symlink_to(root / "alpha/MEMORY.md")
    outside = base / "outside.md"
    outside.write_text("# Outside\n\nzqoutsideword lives outside the root.\n")
    (link_dir / "outside.md").symlink_to(outside)

    import dagster as dg

    from memory_pipeline_tests.helpers.hardening import pipeline_defs

    run_partitioned_job(pipeline_defs(root, uri), "l0_index_job", dg.DagsterInstance.ephemeral(), [t.key for t in tenants()])
    typed = TypedMemories.open(uri, HashEmbedder())
    for t in tenants():
        typed.store_memory(t, "preference", f"Prefers {word(t)} for lunch", actor="test")
        typed.store_memory(t, "todo", f"Call Dana about {word(t)} tomorrow", actor="test")
    config = Settings(root=str(root), lancedb_uri=uri, embedder="hash", teams=TEAMS)
    return root, uri, config


def foreign_words(agent: str, user: str | None) -> dict[str, str]:
    ok = allowed(agent, user)
    return {t.key: word(t) for t in tenants() if t.key not in ok}


def leaks(text: str, agent: str, user: str | None) -> list[str]:
    return [key for key, w in foreign_words(agent, user).items() if w in text] + (
        ["outside"] if "zqoutsideword" in text else []
    )


readers = st.tuples(st.sampled_from(AGENTS), st.sampled_from([*USERS, None]))
queries = st.lists(
    st.one_of(st.sampled_from([word(t) for t in tenants()] + ["zqoutsideword"]),
              st.sampled_from(["codename", "tea", "locker", "Dana", "lunch", "project", "when", "prefer"]),
              st.text(max_size=12)),
    min_size=1, max_size=6,
).map(" ".join)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(reader=readers, query=queries, target=st.sampled_from(tenants()))
def test_no_read_api_returns_another_tenants_memory(world, reader, query, target):
    root, uri, config = world
    agent, user = reader
    embedder = HashEmbedder()
    for hit in search(query, agent, user, store=uri, embedder=embedder, settings=config, min_score=0.0, k=20):
        assert hit.tenant in allowed(agent, user)
        assert not leaks(hit.snippet + " ".join(hit.ids), agent, user)
    injected = inject(query, agent, user, store=uri, embedder=embedder, settings=config, min_score=0.0)
    assert not leaks(json.dumps(injected.to_dict(), default=str), agent, user)

    path = f"{folder(target)}/MEMORY.md"
    if target.key in allowed(agent, user):
        assert word(target) in get(path, agent=agent, user=user, root=root, settings=config).text
    else:
        with pytest.raises(AccessDeniedError):
            get(path, agent=agent, user=user, root=root, settings=config)

    service = MemoryService(agent, user or GLOBAL_USER, settings=config, embedder=embedder)
    answers = [
        service.recall(query, k=20, min_score=0.0) if query.strip() else [],
        service.query(),
        service.knowledge("Dana", include_history=True),
        service.bulletin("memory"),
        service.bulletin("context"),
    ]
    assert not leaks(json.dumps(answers, default=str), agent, user)


def test_symlinks_are_never_indexed_across_tenants_or_out_of_the_root(world):
    _, uri, _ = world
    chunks = ChunkIndex(uri).chunk_rows("alpha~u1", ["path", "text"])
    paths = set(chunks["path"].to_list())
    assert "alpha/users/u1/memory/borrowed.md" not in paths
    assert "alpha/users/u1/memory/outside.md" not in paths
    assert "alpha/users/u1/memory/global-copy.md" not in paths  # another tenant's too: the agent-wide one
    text = " ".join(chunks["text"].to_list())
    assert word(Tenant("alpha", "u1")) in text
    assert not leaks(text, "alpha", "u1")


@pytest.mark.parametrize("path", [
    "../outside.md", "/etc/passwd", "alpha/users/u2/MEMORY.md", "alpha/users/../users/u2/MEMORY.md",
    "alpha/users/u1/../../../beta/MEMORY.md", "alpha\\users\\u2\\MEMORY.md", "C:\\Windows\\win.ini",
    "alpha/users/u1/memory/borrowed.md", "alpha/users/u1/memory/outside.md", "beta/MEMORY.md",
    "alpha/sessions/u2/s1.jsonl", "alpha/users/u2/MEMORY.md#L1-L3",
])
def test_get_refuses_traversal_other_tenants_and_symlinks(world, path):
    root, _, config = world
    with pytest.raises((AccessDeniedError, GetError)) as refused:
        get(path, agent="alpha", user="u1", root=root, settings=config)
    assert str(refused.value)
    assert not leaks(str(refused.value), "alpha", "u1")


@pytest.mark.parametrize("bad", CRAFTED)
def test_crafted_ids_are_refused_everywhere(world, bad):
    root, uri, config = world
    embedder = HashEmbedder()
    calls = [
        lambda: Tenant(bad, "u1"),
        lambda: Tenant("alpha", bad),
        lambda: Tenant.from_key(f"{bad}~u1"),
        lambda: search("codename", bad, "u1", store=uri, embedder=embedder, settings=config),
        lambda: search("codename", "alpha", bad, store=uri, embedder=embedder, settings=config),
        lambda: inject("what is the project codename", "alpha", bad, store=uri, embedder=embedder, settings=config),
        lambda: get("alpha/MEMORY.md", agent=bad, user="u1", root=root, settings=config),
        lambda: MemoryService(bad, "u1", settings=config, embedder=embedder),
        lambda: MemoryService("alpha", bad, settings=config, embedder=embedder),
    ]
    # An empty or missing user means "the agent-wide pool" to search and inject: allowed.
    lenient = {4, 5} if bad == "" else set()
    for i, call in enumerate(calls):
        if i in lenient:
            call()
            continue
        with pytest.raises(InvalidTenantError, match="invalid"):
            call()


def test_cli_search_for_another_user_shows_nothing_of_theirs(world, monkeypatch):
    from memory_pipeline.cli import app

    root, uri, _ = world
    monkeypatch.setenv("MEMORY_PIPELINE_ROOT", str(root))
    monkeypatch.setenv("MEMORY_PIPELINE_LANCEDB_URI", uri)
    monkeypatch.setenv("MEMORY_PIPELINE_EMBEDDER", "hash")
    monkeypatch.setenv("MEMORY_PIPELINE_TEAMS", json.dumps(TEAMS))
    get_settings.cache_clear()
    runner = CliRunner()
    try:
        theirs = word(Tenant("alpha", "u2"))
        out = runner.invoke(app, ["search", f"{theirs} codename locker", "--agent", "alpha", "--user", "u1", "--json"])
        assert out.exit_code == 0, out.output
        assert theirs not in out.stdout and json.loads(out.stdout)
        bad = runner.invoke(app, ["search", "codename", "--agent", "alpha", "--user", "../u2"])
        assert bad.exit_code != 0 and "invalid user id" in bad.output
    finally:
        get_settings.cache_clear()


@pytest.mark.slow
def test_mcp_server_serves_only_its_own_tenant(world):
    from memory_pipeline_tests.helpers.mcp import run_session

    root, uri, _ = world
    env = {**os.environ, "MEMORY_PIPELINE_ROOT": str(root), "MEMORY_PIPELINE_LANCEDB_URI": uri,
           "MEMORY_PIPELINE_EMBEDDER": "hash", "MEMORY_PIPELINE_TEAMS": json.dumps(TEAMS)}
    theirs = word(Tenant("alpha", "u2"))
    _, answers = run_session(env, "alpha", "u1", [
        ("memory_search", {"query": f"{theirs} codename locker tea", "k": 20, "min_score": 0.0}),
        ("memory_get", {"path": "alpha/users/u2/MEMORY.md"}),
        ("memory_get", {"path": "../outside.md"}),
        ("memory_graph_recall", {"query": f"{theirs} lunch", "k": 20}),
        ("knowledge_graph_search", {"entity": "Dana", "include_history": True}),
        ("memory_bulletin", {"kind": "context"}),
    ])
    (s_err, s_text), (g_err, g_text), (t_err, t_text), *rest = answers
    assert not s_err and word(Tenant("alpha", "u1")) in s_text
    assert g_err and "not in the memory" in g_text
    assert t_err and "refused" in t_text
    for error, text in answers:
        assert not leaks(text, "alpha", "u1"), text
    assert not any(error for error, _ in rest)
