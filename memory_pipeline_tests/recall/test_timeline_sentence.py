"""Proves: a supersession record names the one sentence of a turn that changed, and readers label
that sentence, not the whole turn.

A turn of several sentences ("We pushed the cutover to 28 November. Rui needs another week.") is
superseded only in what changed: the record keeps that sentence (``old_sentence``), recall's note
and the injected line quote it, and a record of a one-sentence statement names no sentence (the
statement is the sentence). And the successor a record names is placed above the replaced
result with its own time, found also as the typed memory read from its line. Built from plain
values: no model is needed to read a record.
"""

from __future__ import annotations

from datetime import UTC, datetime

from memory_pipeline.recall.inject import format_memory_line
from memory_pipeline.recall.results import SearchResult
from memory_pipeline.recall.timeline import TenantTimeline, superseded_note
from memory_pipeline.text.statements import TURN, Statement
from memory_pipeline.timeline.records import record_row
from memory_pipeline.timeline.supersede import Supersession

SAID = datetime(2026, 11, 18, 9, tzinfo=UTC)
LATER = datetime(2026, 11, 25, 9, tzinfo=UTC)


def statement(text: str, line: int, when: datetime) -> Statement:
    path = "bot/sessions/ann/s1.jsonl"
    return Statement(f"{path}#L{line}", TURN, text, when, "ann", path, line)


def pair(old_text: str, old_sentence: str) -> Supersession:
    new = statement("We moved the cutover to 5 December.", 9, LATER)
    return Supersession(statement(old_text, 1, SAID), new, 0.7, ("time",), ("moved",), "cutover",
                        old_sentence=old_sentence, new_sentence=new.text)


def test_the_record_names_the_sentence_that_changed_only_when_the_turn_says_more():
    several = pair("We pushed the cutover to 28 November. Rui needs another week for the report.",
                   "We pushed the cutover to 28 November.")
    one = pair("We pushed the cutover to 28 November.", "We pushed the cutover to 28 November.")
    bullet = pair("- We pushed the cutover to 28 November.", "We pushed the cutover to 28 November.")
    rows = [record_row("bot~ann", p, LATER) for p in (several, one, bullet)]
    assert [r["old_sentence"] for r in rows] == ["We pushed the cutover to 28 November.", None, None]


def test_readers_quote_the_replaced_sentence():
    record = record_row("bot~ann", pair("We pushed the cutover to 28 November. Rui needs another week.",
                                        "We pushed the cutover to 28 November."), LATER)
    timeline = TenantTimeline([record])
    found = timeline.record_of("bot/sessions/ann/s1.jsonl", 1, 1)
    note = superseded_note(found)
    assert note == {"by": "bot/sessions/ann/s1.jsonl#L9", "at": "2026-11-25",
                    "sentence": "We pushed the cutover to 28 November."}
    result = SearchResult("sessions", "bot/sessions/ann/s1.jsonl", 1, 1, ["t1"], 0.5, {},
                          "We pushed the cutover to 28 November. Rui needs another week.", "s1.jsonl#L1",
                          "bot~ann", when="2026-11-18 09:00 UTC", superseded=note)
    assert format_memory_line(result) == (
        '- [s1.jsonl#L1] (2026-11-18 09:00 UTC) [superseded "We pushed the cutover to 28 November." 2026-11-25 '
        'by bot/sessions/ann/s1.jsonl#L9] We pushed the cutover to 28 November. Rui needs another week.'
    )
    whole = TenantTimeline([{**record, "old_sentence": None}]).record_of("bot/sessions/ann/s1.jsonl", 1, 1)
    assert superseded_note(whole) == {"by": "bot/sessions/ann/s1.jsonl#L9", "at": "2026-11-25"}


def test_a_successor_raised_from_past_the_annotated_pool_shows_its_time(monkeypatch):
    """The newest statement of a chain may already be a candidate, ranked past the first ones
    that were given their times; raised above the statement it replaced, it shows its day too."""
    from datetime import date

    import numpy as np

    from memory_pipeline.recall import timeline
    from memory_pipeline.recall.results import Candidate
    from memory_pipeline.recall.rows import Rows
    from memory_pipeline.recall.scope import Scope
    from memory_pipeline.tenancy import Tenant

    paths = ["bot/users/ann/MEMORY.md", "bot/users/ann/memory/2026-11-25.md"]
    rows = Rows(tenant="bot~ann", ids=["a", "b"], source=np.array(["memory", "memory"], dtype=object), path=paths,
                start_line=np.array([1, 1]), end_line=np.array([3, 3]), turn_ids=[[], []],
                text=["Lives in York.", "Moved to Leeds."], text_hash=["a", "b"], day=[None, date(2026, 11, 25)],
                when=[None, None], vectors=np.array([[1.0, 0.0], [0.8, 0.6]], dtype=np.float32))
    record = {"old_ref": f"{paths[0]}#L1", "new_ref": f"{paths[1]}#L1", "new_said_at": LATER, "old_sentence": None}
    monkeypatch.setattr(timeline.TIMELINES, "get", lambda cache, tenant: TenantTimeline([record]))

    class Cache:
        def rows(self, source, tenant):
            return rows

    scope = Scope(Tenant("bot", "ann"), 0, 1.0, False)
    old, new = (Candidate(scope, rows, i, 0.9 - i / 10, 0.0, 0.9 - i / 10, 0.0, 1.0, score=0.9 - i / 10) for i in (0, 1))
    timeline.annotate([old], Cache())  # the pool: the first candidate only
    ranked = timeline.newest_first([old, new], np.array([1.0, 0.0], dtype=np.float32), Cache(), {"notes": ["memory"]}, 1)
    assert [(c.rows.text[c.row], c.when) for c in ranked] == [("Moved to Leeds.", "2026-11-25"), ("Lives in York.", None)]


def test_a_typed_memory_restating_the_successor_line_goes_above_the_replaced_section(monkeypatch):
    """'Where does Alice live?': her profile section (replaced) matches, the note section holding
    the move reads unlike the question, but the typed memory read from the move's line reads as
    the question does: it is raised above the profile."""
    import numpy as np

    from memory_pipeline.recall import timeline
    from memory_pipeline.recall.results import Candidate
    from memory_pipeline.recall.rows import Rows
    from memory_pipeline.recall.scope import Scope
    from memory_pipeline.tenancy import Tenant

    profile, note = "bot/users/ann/MEMORY.md", "bot/users/ann/memory/2026-11-25.md"
    notes = Rows(tenant="bot~ann", ids=["a", "b"], source=np.array(["memory", "memory"], dtype=object),
                 path=[profile, note], start_line=np.array([1, 1]), end_line=np.array([9, 12]), turn_ids=[[], []],
                 text=["# Ann\n- Lives in York.\n- Likes tea.", "Standup notes ... moved to Leeds ..."],
                 text_hash=["a", "b"], day=[None, None], when=[None, None],
                 vectors=np.array([[1.0, 0.0, 0.0], [0.1, 0.0, 0.995]], dtype=np.float32))
    facts = Rows(tenant="bot~ann", ids=["m1"], source=np.array(["facts"], dtype=object), path=["facts/m1"],
                 start_line=np.array([1]), end_line=np.array([1]), turn_ids=[[]], text=["Ann moved to Leeds."],
                 text_hash=["fact:m1"], day=[None], when=[LATER], vectors=np.array([[0.8, 0.6, 0.0]], dtype=np.float32),
                 cites=[f"{note}#L3"])
    record = {"old_ref": f"{profile}#L2", "new_ref": f"{note}#L3", "new_said_at": LATER, "old_sentence": "Lives in York."}
    monkeypatch.setattr(timeline.TIMELINES, "get", lambda cache, tenant: TenantTimeline([record]))

    class Cache:
        def rows(self, source, tenant):
            return facts if source == "facts" else notes

    scope = Scope(Tenant("bot", "ann"), 0, 1.0, False)
    old = Candidate(scope, notes, 0, 0.9, 0.0, 0.9, 0.0, 1.0, score=0.9)
    timeline.annotate([old], Cache())
    ranked = timeline.newest_first([old], np.array([1.0, 0.0, 0.0], dtype=np.float32), Cache(),
                                   {"notes": ["memory"], "facts": ["facts"]}, 5)
    assert [(c.rows.text[c.row], c.when) for c in ranked] == [
        ("Ann moved to Leeds.", "2026-11-25"), ("# Ann\n- Lives in York.\n- Likes tea.", None)]
