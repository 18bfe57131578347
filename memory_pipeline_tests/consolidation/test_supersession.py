"""Proves: supersession is decided once, by consolidation, and every reader agrees with it.

With the real spaCy model and all-MiniLM-L6-v2 (loaded once per run):
- a later statement that changes an earlier one about the same subject and attribute supersedes
  it, for a transcript turn (user scope), a dated note (agent-wide scope) and a typed memory, and
  a fact changed twice is a chain whose newest statement is found from the oldest;
- look-alikes (two people's cities, two trips, an added value, a restated value) are left alone;
- consolidation through Dagster records the same rows whatever order its days run in, and a
  rerun writes the same rows; the relation a later one ends has one ``valid_to`` in the stored
  graph, the knowledge-graph search the MCP tool answers with, the dreamed file and the run's
  metadata; the typed query and the bulletin leave the replaced plan out;
- forgetting the newer memory lets the older one stand again (or point at its own successor).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory_pipeline.config import Settings
from memory_pipeline.consolidation.supersession import supersede_tenant
from memory_pipeline.memories.operations import TypedMemories
from memory_pipeline.memories.service import MemoryService
from memory_pipeline.tenancy import Tenant
from memory_pipeline.text.statements import MEMORY, NOTE, TURN, Statement
from memory_pipeline.timeline.records import SupersessionStore
from memory_pipeline.timeline.supersede import detect, lines
from memory_pipeline_tests.helpers import make_resources, write
from memory_pipeline_tests.helpers.consolidation import consolidate, jsonl, metadata, run_dreaming, say

pytestmark = pytest.mark.slow


def at(month: int, day: int, hour: int = 9) -> datetime:
    return datetime(2026, month, day, hour, tzinfo=UTC)


def turn(n: int, text: str, when: datetime, speaker: str | None = "maya") -> Statement:
    path = f"bot/sessions/maya/s{n}.jsonl"
    return Statement(f"{path}#L1", TURN, text, when, speaker, path, 1)


def note(day: str, text: str, line: int = 1) -> Statement:
    path = f"bot/memory/{day}.md"
    return Statement(f"{path}#L{line}", NOTE, text, datetime.fromisoformat(f"{day}T12:00:00+00:00"), None, path, line, by_day=True)


def memory(mid: str, text: str, when: datetime) -> Statement:
    return Statement(f"facts/{mid}", MEMORY, text, when, None, f"facts/{mid}", 1)


def said_memory(mid: str, text: str, when: datetime, session: int) -> Statement:
    """A typed memory read from a turn of the user's session ``session``."""
    return Statement(f"facts/{mid}", MEMORY, text, when, "Priya", f"bot/sessions/priya/s{session}.jsonl", 1)


def pairs(statements, nlp, embedder) -> list[tuple[str, str]]:
    return [(p.old.ref, p.new.ref) for p in detect(statements, nlp, embedder)]


CHANGES = {
    "transcript, user scope": [
        turn(1, "Our standup is at 9:30 every morning.", at(3, 2)),
        turn(2, "Since half the team moved to Singapore hours, the standup is at 8:00 now.", at(4, 6)),
    ],
    "dated note, agent scope": [
        note("2026-01-12", "The analytics cluster runs Spark 3.3."),
        note("2026-06-30", "We upgraded the analytics cluster to Spark 3.5 last week."),
    ],
    # The verb saying the change has its own subject; the clause after it has another.
    "change with a clause of its own": [
        turn(1, "We publish the docs with Sphinx on an old Dell.", at(2, 3)),
        turn(2, "We replaced Sphinx with MkDocs, the old Dell is retired.", at(6, 9)),
    ],
    # The agent's own turn replaces what it says has changed.
    "the agent noting a change": [
        turn(1, "Our standup is at 9:30 every morning.", at(3, 2)),
        turn(2, "Noted: the standup is at 8:00 now (was 9:30).", at(4, 6), None),
    ],
    "typed memory": [
        memory("a", "The quarterly review is on 14 May.", at(4, 1)),
        memory("b", "The quarterly review was pushed to 21 May.", at(4, 20)),
    ],
}


@pytest.mark.parametrize("kind", list(CHANGES))
def test_a_later_statement_supersedes_the_one_it_changes(kind, nlp, minilm):
    old, new = CHANGES[kind]
    assert pairs([old, new], nlp, minilm) == [(old.ref, new.ref)]
    assert pairs([new], nlp, minilm) == []


def test_a_fact_changed_twice_is_a_chain(nlp, minilm):
    first = note("2026-02-09", "Production deploys happen on Tuesdays at 14:00 UTC.")
    second = note("2026-04-13", "The deploy window moved to Wednesdays at 10:00 UTC.")
    third = turn(3, "Heads up: deploys are on Thursdays at 09:00 UTC from now on.", at(8, 24))
    assert pairs([third, first, second], nlp, minilm) == [(first.ref, second.ref), (second.ref, third.ref)]


def test_pairs_are_the_same_whatever_block_of_old_claims_is_masked_at_once(nlp, minilm, monkeypatch):
    """The candidate pairs are masked a block of old claims at a time (memory bounded for a big
    tenant); a block of one claim finds what one block of all of them finds."""
    from memory_pipeline.timeline import supersede

    first = note("2026-02-09", "Production deploys happen on Tuesdays at 14:00 UTC.")
    second = note("2026-04-13", "The deploy window moved to Wednesdays at 10:00 UTC.")
    third = turn(3, "Heads up: deploys are on Thursdays at 09:00 UTC from now on.", at(8, 24))
    other = turn(4, "Maya moved to Lisbon in March.", at(8, 25))
    statements = [third, first, second, other]
    whole = pairs(statements, nlp, minilm)
    monkeypatch.setattr(supersede, "PAIR_ROWS", 1)
    assert pairs(statements, nlp, minilm) == whole == [(first.ref, second.ref), (second.ref, third.ref)]


LISTS = {
    "a number ending a sentence": ("The review is on May 14. Ana runs it.", ["The review is on May 14. Ana runs it."]),
    "a numbered point after a sentence": ("Several things. 1) We pushed the cutover.", ["Several things.", "We pushed the cutover."]),
    "a number ending a sentence before a list": ("It is due November 20. Plan: 1. draft", ["It is due November 20. Plan:", "draft"]),
    "a numbered list on one line": ("Budget: 1. Scene: 500 2. Problem: 550 3. Close: 250", ["Budget:", "Scene: 500", "Problem: 550", "Close: 250"]),
    "a number after a list started": ("See item 3. Then: 1. foo 2. bar", ["See item 3. Then:", "foo", "bar"]),
    "dashes on one line": ("Main risks: - Slots retain WAL. - Long transactions.", ["Main risks:", "Slots retain WAL.", "Long transactions."]),
    "lines and their bullets": ("- a\n- b\n2. c\n  3. d\n\n1. e", ["a", "b", "c", "d", "e"]),
}


@pytest.mark.parametrize("case", list(LISTS))
def test_lists_are_read_apart_and_numbers_stay_in_their_sentence(case):
    text, expected = LISTS[case]
    assert [line.strip() for line in lines(text) if line.strip()] == expected


def test_a_date_ending_a_sentence_is_the_value_a_later_one_changes(nlp, minilm):
    old = turn(1, "The quarterly review is on May 14. Ana runs it.", at(3, 2))
    new = turn(2, "The quarterly review was pushed to May 21.", at(4, 2))
    assert pairs([old, new], nlp, minilm) == [(old.ref, new.ref)]


LOOKALIKES = {
    "two people's cities": ["My sister Ines lives in Braga.", "My brother Tiago lives in Faro, he runs a surf school."],
    "two trips": ["I fly to Berlin on 3 April for the conference.", "I fly to Rome on 12 June for a friend's wedding."],
    "an added value": ["I play the piano most evenings.", "I also started learning the cello this spring."],
    "a restated value": ["Our renewal is on 1 March.", "Just confirming the renewal is still on 1 March."],
    "two deadlines": ["The tax filing deadline is 30 June.", "The grant application deadline is 15 July."],
    "two teams": ["The sales team is based in Dublin.", "The research team is based in Zurich."],
}


@pytest.mark.parametrize("case", list(LOOKALIKES))
def test_lookalikes_are_left_alone(case, nlp, minilm):
    old, new = LOOKALIKES[case]
    assert pairs([turn(1, old, at(3, 1)), turn(2, new, at(5, 20))], nlp, minilm) == []


def profile(text: str, line: int = 1, path: str = "bot/users/maya/MEMORY.md") -> Statement:
    """An undated line: a profile or reference document whose lines carry no date."""
    return Statement(f"{path}#L{line}", NOTE, text, at(1, 5), None, path, line, undated=True)


NOT_CHANGES = {
    # Neither undated line is known to be the later one.
    "two undated documents": [
        profile("Refunds are handled by the Billing team, led by Tomasz Nowak."),
        profile("Refunds are handled by the Billing team, led by Ana Costa.", path="bot/memory/billing-faq.md"),
    ],
    # A profile line kept by hand may be newer than a conversation that seems to differ from it:
    # a change must say so and name what it replaces.
    "a profile line and an unrelated move": [
        profile("The billing admin is Ines Carvalho from Finance."),
        turn(2, "First, admin: I moved to Porto last weekend.", at(11, 11)),
    ],
    "a condition": [
        turn(1, "Our rate limit is 1,000 requests per minute.", at(10, 26)),
        turn(2, "If you need 1,600 requests per minute, the rate limit can be raised by Tier 2.", at(11, 2), None),
    ],
    "an instruction": [
        turn(1, "Open the increase request for 1,600 requests per minute.", at(10, 26)),
        turn(2, "The rate limit was raised to 2,000 requests per minute.", at(11, 4), None),
    ],
    "a value said to hold": [
        turn(1, "The chapter draft is due on 4 December.", at(10, 27)),
        turn(2, "Reminder: the chapter draft is still due on 4 December, the review is on 9 December.", at(11, 9)),
    ],
    "a recalled older value": [
        turn(1, "The abstract deadline is 15 November.", at(10, 27)),
        turn(2, "Good news: the abstract deadline was extended to 22 November.", at(11, 9)),
        turn(3, "Summary: the abstract deadline is now 22 November (was 15 November).", at(11, 9, 10)),
    ],
    # Typed memories read from a user's turns name that user; the name is no topic they share.
    "two memories sharing only whom they are about": [
        said_memory("a", "Priya is trying to get around Lisbon more efficiently.", at(5, 2), 17),
        said_memory("b", "Priya did clean Coco's litter box last Sunday, actually.", at(5, 9), 28),
    ],
    # The agent's advice names other things without saying anything changed: a recommendation, not a fact.
    "the agent recommending other things": [
        turn(1, "Todoist and RescueTime are both excellent tools to manage your tasks.", at(3, 2), None),
        turn(2, "Notion and Trello are excellent tools to manage your tasks.", at(4, 6), None),
    ],
    # Advice weighing one way against another: "instead" ends nothing the user said or did.
    "the agent advising one way instead of another": [
        turn(1, "Distracting yourself from the pain can be an effective tool in pain management.", at(3, 2), None),
        turn(2, "Toughing it out is not a recommended strategy for pain management; build a pain management "
                "plan instead.", at(4, 6), None),
    ],
    "a change word describing a thing": [
        note("2026-10-28", "Webhook deliveries time out after 10 seconds."),
        note("2026-11-12", "Webhook deliveries failed for an hour after a firewall rule change at 2 customers."),
    ],
}


@pytest.mark.parametrize("case", list(NOT_CHANGES))
def test_statements_that_change_nothing_supersede_nothing(case, nlp, minilm):
    found = pairs(NOT_CHANGES[case], nlp, minilm)
    if case == "a recalled older value":  # the extension supersedes; its summary does not supersede it
        assert found == [(NOT_CHANGES[case][0].ref, NOT_CHANGES[case][1].ref)]
    else:
        assert found == []


def test_a_profile_line_is_superseded_by_a_change_naming_it(nlp, minilm):
    old = profile("Our head office is in Lisbon.")
    new = note("2026-11-11", "We moved the head office from Lisbon to Porto.")
    assert pairs([old, new], nlp, minilm) == [(old.ref, new.ref)]


def test_a_users_own_profile_line_is_about_that_user(nlp, minilm):
    """A line of a user's own notes that names no subject ("Lives in Lisbon") is about that user,
    so a dated change naming the user and the old value replaces it; the same value naming only the
    kind of something else ("Lisbon time") is not replaced by the move."""
    def own(text: str, line: int) -> Statement:
        path = "bot/users/maya/MEMORY.md"
        return Statement(f"{path}#L{line}", NOTE, text, at(11, 29), None, path, line, undated=True, subject="maya")

    lives, hours = own("Lives in Lisbon, Portugal.", 10), own("Prefers meetings before 16:00 Lisbon time.", 17)
    moved = Statement("bot/users/maya/memory/2026-11-11.md#L3", NOTE, "Maya has moved from Lisbon to Porto.",
                      at(11, 11, 12), None, "bot/users/maya/memory/2026-11-11.md", 3, by_day=True, subject="maya")
    assert pairs([lives, hours, moved], nlp, minilm) == [(lives.ref, moved.ref)]
    # Without knowing whom the line is about, nothing says it is Maya who lives there.
    anonymous = Statement(lives.ref, NOTE, lives.text, lives.said_at, None, lives.path, lives.line, undated=True)
    assert pairs([anonymous, moved], nlp, minilm) == []


ANN = "bot~ann"


def write_ann(root):
    write(root, "bot/sessions/ann/s1.jsonl", jsonl(
        say("user", "My manager is Dana Whitfield.", "2026-10-01T09:00:00Z", "t1"),
        say("user", "The database cutover is on Saturday 21 November.", "2026-10-01T09:01:00Z", "t2"),
        completed="2026-10-01T09:05:00Z",
    ))
    write(root, "bot/sessions/ann/s2.jsonl", jsonl(
        say("user", "Dana is leaving. From 1 December my manager is Tomás Ribeiro.", "2026-11-18T08:50:00Z", "t1"),
        say("user", "We pushed the database cutover from 21 November to Saturday 5 December.", "2026-11-18T08:52:00Z", "t2"),
        completed="2026-11-18T08:55:00Z",
    ))


def records(lance_uri) -> list[dict]:
    rows = SupersessionStore(lance_uri).rows(ANN).sort("id")
    return [{k: v for k, v in r.items()} for r in rows.iter_rows(named=True)]


def test_consolidation_records_once_and_every_reader_agrees(tmp_path, instance, minilm):
    root, orders = tmp_path / "agents", [("2026-10-01", "2026-11-18"), ("2026-11-18", "2026-10-01")]
    write_ann(root)
    found, closed = [], []
    for n, order in enumerate(orders):
        lance_uri = str(tmp_path / f"lancedb{n}")
        resources = make_resources(root, lance_uri, embedder="minilm")
        results = [consolidate(instance, resources, day, tenant=ANN) for day in order]
        assert all(r.success for r in results)
        closed += [metadata(r, "semantic_graph")["closed"] for r in results]
        found.append(records(lance_uri))
    assert found[0], "the moved cutover and the old manager are recorded"
    strip = [[{k: v for k, v in r.items() if k != "decided_at"} for r in rows] for rows in found]
    assert strip[0] == strip[1]  # whichever day ran first
    olds = {r["old_ref"]: r["new_ref"] for r in found[0]}
    assert olds["bot/sessions/ann/s1.jsonl#L2"] == "bot/sessions/ann/s2.jsonl#L2"
    assert {r["decided_by"] for r in found[0]} == {"extractive"}

    # A rerun writes the same rows, decision times included.
    lance_uri = str(tmp_path / "lancedb1")
    resources = make_resources(root, lance_uri, embedder="minilm")
    rerun = consolidate(instance, resources, "2026-11-18", tenant=ANN)
    assert records(lance_uri) == found[1]
    meta = metadata(rerun, "semantic_graph")
    assert meta["supersessions"] == len(found[1]) and meta["supersessions_added"] == 0

    # One end date for Dana, wherever it is read: stored graph, run metadata, MCP's knowledge
    # search (the service it calls), and the dreamed file.
    settings = Settings(root=str(root), lancedb_uri=lance_uri, embedder="minilm")
    knowledge = MemoryService("bot", "ann", settings=settings, embedder=minilm).knowledge("Ann", include_history=True)
    dana = next(r for r in knowledge["relations"] if r["object"] == "Dana Whitfield")
    assert dana["valid_to"][:10] == "2026-12-01"
    # Closed once per order, by the first run whose graph holds Dana: both transcripts are read then.
    assert [i for i, table in enumerate(closed) if "| Dana Whitfield | 2026-12-01 |" in table] == [0, 3]
    assert run_dreaming(instance, resources, tenant=ANN).success
    dreamed = next((root / "bot" / "users" / "ann" / "memory" / "_system" / "dreaming").glob("*.md")).read_text()
    assert "Dana Whitfield (2026-10-01 to 2026-12-01)" in dreamed


def test_forgetting_the_newer_memory_lets_the_older_stand_again(tmp_path, minilm, nlp):
    lance_uri, tenant = str(tmp_path / "lancedb"), Tenant("bot", "kim")
    typed = TypedMemories.open(lance_uri, minilm)
    plans = [
        typed.store_memory(tenant, "event", text, occurred_at=when, actor="test")
        for text, when in [("The offsite is on 14 May.", at(3, 3)), ("The offsite was rescheduled to 4 June.", at(4, 7)),
                           ("The offsite moved again, to 18 June.", at(5, 2))]
    ]
    first, second, third = (f"facts/{p['id']}" for p in plans)
    supersede_tenant(tmp_path, lance_uri, tenant, minilm, at(6, 1), nlp=nlp)
    store = SupersessionStore(lance_uri)

    def chain() -> dict[str, str]:
        return {r["old_ref"]: r["new_ref"] for r in store.rows(tenant.key).iter_rows(named=True)}

    assert chain() == {first: second, second: third}
    service = MemoryService("bot", "kim", settings=Settings(root=str(tmp_path), lancedb_uri=lance_uri), embedder=minilm)
    assert [r["content"] for r in service.query(memory_type="event")] == ["The offsite moved again, to 18 June."]
    typed.forget_memory(tenant, plans[1]["id"], reason="said by mistake", actor="test")
    assert chain() == {first: third}  # the first plan now points at the last one
    typed.forget_memory(tenant, plans[2]["id"], reason="cancelled", actor="test")
    assert chain() == {}
    assert [r["content"] for r in service.query(memory_type="event")] == ["The offsite is on 14 May."]
    # The next consolidation agrees with what forgetting left.
    supersede_tenant(tmp_path, lance_uri, tenant, minilm, at(6, 2), nlp=nlp)
    assert chain() == {}


def test_statements_leave_out_code_and_the_pipelines_own_documents(tmp_path):
    """A dreamed file restates the statements it came from, and code in a turn states no fact."""
    from memory_pipeline.timeline.statements import tenant_statements

    root = tmp_path / "agents"
    write(root, "bot/sessions/ann/s1.jsonl", jsonl(
        say("user", "Pin the CLI:\n```\nlumen self-update --version 4.2.0\n```\nThe runner uses version 4.1.", "2026-10-01T09:00:00Z", "t1"),
        completed="2026-10-01T09:05:00Z",
    ))
    write(root, "bot/users/ann/memory/2026-10-01.md", "- The runner uses version 4.1.\n")
    write(root, "bot/users/ann/memory/_system/dreaming/20261002-consolidated.md", "- The runner uses version 4.1.\n")
    found = tenant_statements(root, Tenant("bot", "ann"))
    assert sorted((s.path, " ".join(s.text.split())) for s in found) == [
        ("bot/sessions/ann/s1.jsonl", "Pin the CLI: The runner uses version 4.1."),
        ("bot/users/ann/memory/2026-10-01.md", "The runner uses version 4.1."),
    ]
