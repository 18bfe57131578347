"""Tenant isolation: no recall for one (agent, user) ever returns another user's or agent's rows.

Each tenant of the fixture holds words no other tenant has (``pineapple`` is Bob's codeword and
appears in another agent's note about Alice). Searching for them as anyone else must find
nothing of theirs, through either channel; a property test throws arbitrary queries and options
at ``search`` and checks every result's tenant and path against the reader's scope.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from memory_pipeline.recall.scope import path_tenant, recall_scopes
from memory_pipeline.recall.search import search

READERS = [
    ("support-bot", "alice"), ("support-bot", "bob"), ("support-bot", None),
    ("helper-bot", "alice"), ("helper-bot", "carol"), ("research-bot", "alice"), ("research-bot", None),
]


def _allowed(agent, user, settings) -> set[str]:
    return {s.key for s in recall_scopes(agent, user, settings)}


def test_another_users_words_find_nothing_of_theirs(indexed, settings, embedder):
    results = search("pineapple codeword team tier", "support-bot", "alice", store=indexed[1], embedder=embedder, settings=settings, min_score=0, k=20)
    assert results, "the query still finds the reader's own memory"
    assert all(r.tenant in {"support-bot~alice", "support-bot~_global"} for r in results)
    assert not any("pineapple" in r.snippet for r in results)


def test_another_agents_memory_of_the_same_user_is_invisible(indexed, settings, embedder):
    results = search("coral reef bleaching archipelago", "support-bot", "alice", store=indexed[1], embedder=embedder, settings=settings, min_score=0, k=20)
    assert not any("coral" in r.snippet for r in results)
    own = search("coral reef bleaching archipelago", "research-bot", "alice", store=indexed[1], embedder=embedder, settings=settings)
    assert own[0].tenant == "research-bot~alice"


def test_agent_wide_reader_never_sees_user_memory(indexed, settings, embedder):
    results = search("Alice prefers email API rate limit", "support-bot", None, store=indexed[1], embedder=embedder, settings=settings, min_score=0, k=20)
    assert results and {r.tenant for r in results} == {"support-bot~_global"}


def test_leader_does_not_read_its_members_memory(indexed, settings, embedder):
    results = search("shipping labels helper", "support-bot", "alice", store=indexed[1], embedder=embedder, settings=settings, min_score=0, k=20)
    assert not any(r.tenant.startswith("helper-bot") for r in results)


@hsettings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    reader=st.sampled_from(READERS),
    query=st.one_of(
        st.text(min_size=1, max_size=40),
        st.lists(st.sampled_from(["pineapple", "alice", "coral", "email", "VPN", "outage", "API", "shipping", "plans", "'", "OR", "*"]), min_size=1, max_size=6).map(" ".join),
    ),
    sources=st.sampled_from([None, ["memory"], ["sessions"], ["memory", "sessions"]]),
    mmr=st.booleans(),
)
def test_no_query_returns_rows_outside_the_readers_scope(indexed, settings, embedder, reader, query, sources, mmr):
    agent, user = reader
    allowed = _allowed(agent, user, settings)
    results = search(query, agent, user, sources=sources, mmr=mmr, store=indexed[1], embedder=embedder, settings=settings, min_score=0, k=20)
    for r in results:
        assert r.tenant in allowed
        assert path_tenant(r.path).key == r.tenant
        assert sources is None or r.source in sources
