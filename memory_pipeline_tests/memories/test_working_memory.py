"""Working memory: the section an agent loads into its prompt every cycle.

Proves: the section holds the user's current memory in fixed sections, each item dated and cited;
it stays within its token budget, dropping the least important items first; the same memory gives
byte-identical text whatever order it was stored in (a prompt cache keeps hitting); what a later
statement replaced, past todos and repeated contents are left out. Real LanceDB under tmp_path,
memories stored through the audited operations.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from memory_pipeline.activation.access_log import spool_file
from memory_pipeline.embedding import HashEmbedder
from memory_pipeline.memories.operations import MemoryOperationError, TypedMemories
from memory_pipeline.memories.query import ReadScope
from memory_pipeline.memories.working import count_tokens, working_memory
from memory_pipeline.store.base import stable_id
from memory_pipeline.tenancy import Tenant
from memory_pipeline.timeline.records import SupersessionStore

ALICE = Tenant("support-bot", "alice")
SCOPE = ReadScope([ALICE.key], [])
NOW = datetime(2026, 11, 20, 12, tzinfo=UTC)


def day(n: int, hour: int = 9) -> datetime:
    return datetime(2026, 11, n, hour, tzinfo=UTC)


# (type, content, said, due)
MEMORIES = [
    ("identity", "Alice Ferreira, Head of Data Platform at Tidewater", day(2), None),
    ("preference", "Prefers concise answers, the command first", day(3), None),
    ("preference", "Email only, no phone calls", day(12), None),
    ("goal", "Migrate the operational database to PostgreSQL 16", day(4), None),
    ("decision", "The board approved the PostgreSQL 16 budget", day(5), None),
    ("todo", "Send Alice the renewal statement", day(10), day(25)),
    ("todo", "Ask Marco about the annual invoice", day(11), None),
    ("todo", "Share the October uptime report", day(1), day(15)),  # due before NOW: not pending
    ("event", "Cutover on Saturday 5 December", day(18), datetime(2026, 12, 5, tzinfo=UTC)),
    ("event", "Hit 1,700 requests a minute without a 429", day(11, 15), None),
    ("fact", "Workspace ws_tidewater runs in eu-central", day(6), None),
    ("observation", "Asks about rate limits every week", day(13), None),
]

EXPECTED = """# Working memory: support-bot/alice

## Identity and preferences
- Email only, no phone calls (2026-11-12 09:00; facts/{m2})
- Prefers concise answers, the command first (2026-11-03 09:00; facts/{m1})
- Alice Ferreira, Head of Data Platform at Tidewater (2026-11-02 09:00; facts/{m0})

## Goals and decisions
- The board approved the PostgreSQL 16 budget (2026-11-05 09:00; facts/{m4})
- Migrate the operational database to PostgreSQL 16 (2026-11-04 09:00; facts/{m3})

## Pending todos
- Send Alice the renewal statement (due 2026-11-25 09:00, 2026-11-10 09:00; facts/{m5})
- Ask Marco about the annual invoice (2026-11-11 09:00; facts/{m6})

## Time-sensitive (next 30 days)
- Cutover on Saturday 5 December (due 2026-12-05, 2026-11-18 09:00; facts/{m8})

## Recent
- Asks about rate limits every week (2026-11-13 09:00; facts/{m11})
- Hit 1,700 requests a minute without a 429 (2026-11-11 15:00; facts/{m9})
- Workspace ws_tidewater runs in eu-central (2026-11-06 09:00; facts/{m10})
"""


@pytest.fixture
def typed(lance_uri: str) -> TypedMemories:
    return TypedMemories.open(lance_uri, HashEmbedder())


def store_all(typed: TypedMemories, memories=MEMORIES) -> list[str]:
    return [
        typed.store_memory(ALICE, kind, text, occurred_at=said, happens_at=due, actor="test")["id"]
        for kind, text, said, due in memories
    ]


def test_sections_hold_the_current_memory_dated_and_cited(typed):
    ids = store_all(typed)
    found = working_memory(typed.store, SCOPE, title="support-bot/alice", now=NOW)
    assert found.markdown == EXPECTED.format(**{f"m{i}": mid for i, mid in enumerate(ids)})
    assert (found.tokens, found.left_out) == (count_tokens(found.markdown), 0)
    assert [i.section for i in found.items] == ["identity"] * 3 + ["goals"] * 2 + ["todos"] * 2 + ["soon"] + ["recent"] * 3


def test_the_same_memory_gives_byte_identical_text_in_any_stored_order(typed, tmp_path):
    store_all(typed)
    other = TypedMemories.open(str(tmp_path / "other"), HashEmbedder())
    store_all(other, list(reversed(MEMORIES)))
    first = working_memory(typed.store, SCOPE, title="support-bot/alice", now=NOW)
    again = working_memory(typed.store, SCOPE, title="support-bot/alice", now=NOW + timedelta(minutes=5))
    reordered = working_memory(other.store, SCOPE, title="support-bot/alice", now=NOW)
    assert first.markdown.encode() == again.markdown.encode() == reordered.markdown.encode()


@pytest.mark.parametrize("budget", [60, 120, 200, 400])
def test_it_stays_within_its_budget_keeping_the_most_important_items(typed, budget):
    store_all(typed)
    store_all(typed, [("fact", f"Ticket LUM-{n} about connector lag was closed", day(14) + timedelta(hours=n), None)
                      for n in range(40)])
    full = working_memory(typed.store, SCOPE, title="support-bot/alice", now=NOW)
    found = working_memory(typed.store, SCOPE, title="support-bot/alice", now=NOW, token_budget=budget)
    assert count_tokens(found.markdown) <= budget and found.tokens == count_tokens(found.markdown)
    assert len(found.items) + found.left_out == len(full.items) + full.left_out
    # Items are kept in priority order: identity and preferences, todos, due items, goals, recent.
    order = ["identity", "todos", "soon", "goals", "recent"]
    ranked = sorted(full.items, key=lambda i: order.index(i.section))
    assert ranked[: len(found.items)] == sorted(found.items, key=lambda i: order.index(i.section))


def test_the_profile_a_person_wrote_is_kept_whatever_was_said_since(typed):
    """Undated MEMORY.md lines (the profile) sorted after every dated statement and the budget cut
    from the end, so a user who said many things in chats lost their own profile. It is now kept
    first, and still read after what was said lately, which a later statement may have made stale."""
    store_all(typed, [("preference", f"Enjoys the hiking trail number {n} on weekends", day(n + 1), None) for n in range(12)])
    profile = [typed.row(ALICE, kind, text, source="markdown", source_ref=f"support-bot/users/alice/MEMORY.md#L{line}")
               for kind, text, line in (("preference", "Prefers concise answers, the command first", 12),
                                        ("identity", "Alice Ferreira, Head of Data Platform at Tidewater", 3))]
    typed.embed_rows(profile)
    typed.store.upsert_memories(profile)
    found = working_memory(typed.store, SCOPE, title="support-bot/alice", token_budget=200, now=NOW)
    shown = [i.content for i in found.items]
    assert shown[0] == "Enjoys the hiking trail number 11 on weekends"  # what was said, newest first
    assert set(shown[-2:]) == {"Prefers concise answers, the command first", "Alice Ferreira, Head of Data Platform at Tidewater"}
    assert 2 < len(shown) < 14 and found.left_out == 14 - len(shown) and found.tokens <= 200
    # A budget for one line keeps the profile's first line.
    assert [i.content for i in working_memory(typed.store, SCOPE, title="a", token_budget=60, now=NOW).items] == [
        "Alice Ferreira, Head of Data Platform at Tidewater"]


def test_a_profile_line_shows_no_time(typed):
    """A memory read from an undated MEMORY.md line was true at no known time: the section shows
    neither when it was extracted nor when its file was edited, which beside a dated statement
    would read as the newer; what an agent stored live shows when it was stored."""
    profile = typed.row(ALICE, "identity", "Lives in Lisbon, Portugal", source="markdown",
                        source_ref="support-bot/users/alice/MEMORY.md#L3")
    typed.embed_rows([profile])
    typed.store.upsert_memories([profile])
    typed.store_memory(ALICE, "identity", "Moved to Porto last weekend", occurred_at=day(8), actor="test")
    typed.store_memory(ALICE, "preference", "Likes short answers", actor="test")  # known from now on
    lines = working_memory(typed.store, SCOPE, title="support-bot/alice").markdown.splitlines()
    assert f"- Lives in Lisbon, Portugal (facts/{profile['id']})" in lines
    assert any(line.startswith("- Moved to Porto last weekend (2026-11-08 09:00; facts/") for line in lines)
    assert any(line.startswith("- Likes short answers (20") for line in lines)


def test_recent_entries_are_at_most_thirty_newest_first(typed):
    store_all(typed, [("fact", f"Ticket LUM-{n} about connector lag was closed", day(1) + timedelta(hours=n), None)
                      for n in range(40)])
    found = working_memory(typed.store, SCOPE, title="support-bot/alice", now=NOW, token_budget=5000)
    assert [i.content for i in found.items] == [f"Ticket LUM-{n} about connector lag was closed" for n in range(39, 9, -1)]


def test_used_memories_are_chosen_for_the_recent_entries_which_still_read_newest_first(typed):
    ids = store_all(typed, [("fact", f"Ticket LUM-{n} about connector lag was closed", day(1) + timedelta(hours=n), None)
                            for n in range(40)])
    tiers = {ids[2]: "hot", ids[5]: "warm", ids[7]: "cool"}
    found = working_memory(typed.store, SCOPE, title="support-bot/alice", now=NOW, max_recent=5, tiers=tiers)
    assert [(i.content.split()[1], i.tier) for i in found.items] == [
        ("LUM-39", None), ("LUM-38", None), ("LUM-37", None), ("LUM-5", "warm"), ("LUM-2", "hot")]
    again = working_memory(typed.store, SCOPE, title="support-bot/alice", now=NOW, max_recent=5, tiers=dict(tiers))
    assert again.markdown == found.markdown
    unused = working_memory(typed.store, SCOPE, title="support-bot/alice", now=NOW, max_recent=5)
    assert [i.content.split()[1] for i in unused.items] == ["LUM-39", "LUM-38", "LUM-37", "LUM-36", "LUM-35"]


def test_superseded_and_repeated_memories_are_left_out(typed):
    old = typed.store_memory(ALICE, "event", "Cutover on Saturday 21 November", occurred_at=day(1), happens_at=day(21))
    new = typed.store_memory(ALICE, "event", "Cutover moved to Saturday 5 December", occurred_at=day(18),
                             happens_at=datetime(2026, 12, 5, tzinfo=UTC))
    email = typed.store_memory(ALICE, "preference", "Email only, no phone calls", occurred_at=day(2))
    typed.store_memory(ALICE, "fact", "email only, no phone calls.", occurred_at=day(3))
    before = working_memory(typed.store, SCOPE, title="a", now=NOW)
    assert [i.content for i in before.items] == [
        "Email only, no phone calls", "Cutover on Saturday 21 November", "Cutover moved to Saturday 5 December",
    ]
    SupersessionStore(typed.store.uri).replace_tenant(ALICE.key, [{
        "id": stable_id("supersession", ALICE.key, f"facts/{old['id']}"), "tenant": ALICE.key,
        "old_ref": f"facts/{old['id']}", "old_kind": "memory", "old_said_at": day(1), "new_ref": f"facts/{new['id']}",
        "new_kind": "memory", "new_said_at": day(18), "attribute": "cutover", "changed": ["date"], "cues": ["moved"],
        "score": 0.9, "decided_by": "extractive", "decided_at": day(18), "old_sentence": None,
    }])
    after = working_memory(typed.store, SCOPE, title="a", now=NOW)
    assert [(i.section, i.citation) for i in after.items] == [
        ("identity", f"facts/{email['id']}"),
        ("soon", f"facts/{new['id']}"),
    ]


def test_a_past_now_reads_the_memory_as_it_was_known_then(typed):
    """``context --now`` in the past listed what was said after it, and left out a plan that only
    a later statement moved. At a past ``now`` the section holds what had been said by then, and
    is valid until the next statement is said."""
    old = typed.store_memory(ALICE, "event", "Cutover on Saturday 21 November", occurred_at=day(1), happens_at=day(21))
    new = typed.store_memory(ALICE, "event", "Cutover moved to Saturday 5 December", occurred_at=day(18),
                             happens_at=datetime(2026, 12, 5, tzinfo=UTC))
    email = typed.store_memory(ALICE, "preference", "Email only, no phone calls", occurred_at=day(12))
    SupersessionStore(typed.store.uri).replace_tenant(ALICE.key, [{
        "id": stable_id("supersession", ALICE.key, f"facts/{old['id']}"), "tenant": ALICE.key,
        "old_ref": f"facts/{old['id']}", "old_kind": "memory", "old_said_at": day(1), "new_ref": f"facts/{new['id']}",
        "new_kind": "memory", "new_said_at": day(18), "attribute": "cutover", "changed": ["date"], "cues": ["moved"],
        "score": 0.9, "decided_by": "extractive", "decided_at": day(18), "old_sentence": None,
    }])
    cited = lambda at: [(i.section, i.citation) for i in working_memory(typed.store, SCOPE, title="a", now=at).items]  # noqa: E731
    assert cited(day(10)) == [("soon", f"facts/{old['id']}")]
    assert cited(day(14)) == [("identity", f"facts/{email['id']}"), ("soon", f"facts/{old['id']}")]
    assert cited(NOW) == [("identity", f"facts/{email['id']}"), ("soon", f"facts/{new['id']}")]
    assert working_memory(typed.store, SCOPE, title="a", now=day(10)).valid_until == day(12)
    assert working_memory(typed.store, SCOPE, title="a", now=day(14)).valid_until == day(18)


def test_a_past_now_leaves_out_the_sessions_completed_after_it(typed):
    import polars as pl

    episodes = pl.DataFrame({
        "id": ["e1", "e2"], "tenant": [ALICE.key] * 2, "path": [f"support-bot/sessions/alice/s{n}.jsonl" for n in (1, 2)],
        "start_line": [1, 1], "end_line": [9, 9], "l0_abstract": ["Alice asked about rate limits.", "Alice planned the cutover."],
        "completed_at": [day(5), day(15)],
    })
    made = lambda at: working_memory(typed.store, SCOPE, title="a", now=at, episodes=episodes)  # noqa: E731
    assert [i.citation for i in made(day(10)).items] == ["episodes/e1"]
    assert made(day(10)).valid_until == day(15)
    assert [i.citation for i in made(NOW).items] == ["episodes/e2", "episodes/e1"]


def test_an_empty_memory_is_a_heading_and_bad_budgets_are_refused(typed):
    assert working_memory(typed.store, SCOPE, title="a", now=NOW).markdown == "# Working memory: a\n"
    with pytest.raises(MemoryOperationError, match="token_budget must be a whole number of at least 50, got 10"):
        working_memory(typed.store, SCOPE, title="a", token_budget=10)


def test_the_command_and_the_python_api_print_the_same_section(root, lance_uri, tmp_path, monkeypatch):
    import dagster as dg

    from memory_pipeline.config import get_settings
    from memory_pipeline.memories.service import MemoryService
    from memory_pipeline_tests.cli_env import cli_app, run

    (root / "support-bot" / "users" / "alice").mkdir(parents=True)
    app = cli_app(monkeypatch, root, lance_uri, tmp_path / "dagster_home", dg.Definitions())
    try:
        service = MemoryService("support-bot", "alice", actor="test", embedder=HashEmbedder())
        stored = service.store_memory("preference", "Email only, no phone calls", occurred_at="2026-11-12T09:00")
        who = ["-a", "support-bot", "-u", "alice", "--now", "2026-11-20T12:00"]
        text = run(app, "context", *who)
        assert text == service.context(now=NOW).markdown == (
            "# Working memory: support-bot/alice\n\n## Identity and preferences\n"
            f"- Email only, no phone calls (2026-11-12 09:00; facts/{stored['id']})\n"
        )
        as_json = json.loads(run(app, "context", *who, "--budget", "60", "--json"))
        assert (as_json["markdown"], as_json["token_budget"], as_json["left_out"]) == (text, 60, 0)
        assert as_json["items"] == [{
            "section": "identity", "citation": f"facts/{stored['id']}", "memory_type": "preference",
            "content": "Email only, no phone calls", "said": "2026-11-12 09:00", "due": None, "source_ref": None,
            "tier": None, "superseded": None,
        }]
        # What the working memory handed out is in the access log, as recall's results are.
        spooled = [json.loads(line) for line in spool_file(lance_uri, ALICE.key).read_text().splitlines()]
        assert {(e["unit"], tuple(e["row_ids"]), e["event"], e["channel"]) for e in spooled} == {
            (f"facts/{stored['id']}", (stored["id"],), "returned", "context")}
        assert "--budget" in run(app, "context", "--help")
    finally:
        get_settings.cache_clear()
