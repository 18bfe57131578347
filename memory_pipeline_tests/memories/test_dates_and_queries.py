"""Dates said relative to a message resolve in the speaker's timezone, and typed queries cut time
windows in the user's local time.

Midnight is where windows go wrong: 22:30 in Toronto on 9 November is already 10 November in UTC,
so "tomorrow" and "on or before 9 November" must be computed locally, not on the server's clock.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory_pipeline.embedding import HashEmbedder
from memory_pipeline.memories.operations import MemoryOperationError, TypedMemories
from memory_pipeline.memories.query import ReadScope, parse_duration, query_memories
from memory_pipeline.tenancy import Tenant
from memory_pipeline.text.dates import detect_timezone, find_when, rescheduled, zone

LISBON = zone("Europe/Lisbon")
TORONTO = zone("America/Toronto")
CAROL = Tenant("research-assistant", "carol")


def utc(*args) -> datetime:
    return datetime(*args, tzinfo=UTC)


@pytest.mark.parametrize(
    "text, said_at, tz, expected",
    [
        # Said on Friday 30 October 2026: "next Tuesday" is 3 November (the sample note agrees).
        ("Next Tuesday I'm presenting our data platform roadmap to the board.", utc(2026, 10, 30, 14, 7), LISBON, utc(2026, 11, 3)),
        ("I'll send you the traffic profile by Wednesday.", utc(2026, 10, 26, 9, 26), LISBON, utc(2026, 10, 28)),
        ("Also remember: Emma's birthday is March 14.", utc(2026, 11, 10, 19, 19), TORONTO, utc(2027, 3, 14, 5)),  # DST starts at 02:00 that day
        ("Interview on Wednesday, Nov 4, 10 a.m.", utc(2026, 10, 31, 15, 24), TORONTO, utc(2026, 11, 4, 15)),
        ("Dana Whitfield is leaving Tidewater at the end of November.", utc(2026, 11, 18, 8, 52), LISBON, utc(2026, 11, 30)),
        ("From 1 December my manager is Tomás Ribeiro.", utc(2026, 11, 18, 8, 52), LISBON, utc(2026, 12, 1)),
        ("We pushed the PG16 cutover from 21 November to Saturday 28 November.", utc(2026, 11, 18, 8, 47), LISBON, utc(2026, 11, 28)),
        ("we ran the PG16 staging test yesterday", utc(2026, 11, 11, 15, 8), LISBON, utc(2026, 11, 10)),
        # 22:30 on 9 November in Toronto is 03:30 UTC on the 10th: "tomorrow" is still the 10th.
        ("Call the plant tomorrow.", utc(2026, 11, 10, 3, 30), TORONTO, utc(2026, 11, 10, 5)),
        ("Call the plant tomorrow.", utc(2026, 11, 10, 3, 30), zone("UTC"), utc(2026, 11, 11)),
        ("Nothing dated here, thanks.", utc(2026, 11, 10), LISBON, None),
    ],
)
def test_relative_dates_resolve_against_the_message_time(text, said_at, tz, expected):
    assert find_when(text, said_at, tz) == expected


@pytest.mark.parametrize(
    "said, occurred, happens",
    [
        # A past deed dated without a year happened before it was said: not a plan for next year.
        ("We renewed the annual plan on 1 March.", utc(2026, 3, 1), None),
        # A past verb naming a target date still plans it.
        ("We pushed the PG16 cutover to Saturday 5 December.", utc(2026, 11, 18, 8, 47), utc(2026, 12, 5)),
        ("Our annual plan renews on 1 March.", utc(2026, 11, 18, 8, 47), utc(2027, 3, 1)),
    ],
)
def test_a_date_of_a_past_deed_lies_before_it_was_said(said, occurred, happens):
    """Tense is read from the verb the date hangs on (its morphology), through the extractor."""
    from memory_pipeline.sources.transcripts import parse_transcript
    from memory_pipeline.text.memory_types import extract, transcript_passages

    line = '{"role": "user", "content": "%s", "ts": "2026-11-18T08:47:00Z"}' % said
    passages = transcript_passages(list(parse_transcript(line + "\n").turns), "bot/sessions/ann/s1.jsonl", "ann")
    found = extract(passages, zone("UTC"))
    assert [(m.occurred_at, m.happens_at) for m in found] == [(occurred, happens)]


def test_an_undated_note_keeps_only_calendar_dates():
    written = utc(2026, 11, 22, 9)  # an undated note's only time is when the file was written
    assert find_when("I avoid filler (\"in today's fast-paced world\").", written, LISBON, relative=False) is None
    text = "Alice presents the roadmap to the board next Tuesday, 2026-11-03."
    assert find_when(text, written, LISBON, relative=False) == utc(2026, 11, 3)


def test_a_move_from_one_date_to_another():
    said = utc(2026, 11, 10, 17)
    text = "Jonah cut the feature from 4,500 to 3,500 words and moved the deadline from 2026-11-20 to 2026-11-24."
    assert rescheduled(text, said, TORONTO) == (utc(2026, 11, 20, 5), utc(2026, 11, 24, 5))
    assert rescheduled("We moved from Lisbon to Porto.", said, LISBON) is None


def test_the_timezone_comes_from_the_memory_file():
    assert detect_timezone(["- Lives in **Lisbon**. Timezone Europe/Lisbon (WET, UTC+0)."]) == "Europe/Lisbon"
    assert detect_timezone(["Timezone: Mars/Olympus"]) is None


@pytest.fixture
def typed(lance_uri) -> TypedMemories:
    g = TypedMemories.open(lance_uri, HashEmbedder())
    rows = [
        # Late evening in Toronto on 9 Nov (the 10th in UTC) and early on the 10th local.
        g.row(CAROL, "event", "Evening call with Jonah", occurred_at=utc(2026, 11, 10, 3, 30)),
        g.row(CAROL, "event", "Morning interview with Okonkwo", occurred_at=utc(2026, 11, 10, 14, 0)),
        # Scheduled: 23:50 local tonight, 00:10 local tomorrow, and next week.
        g.row(CAROL, "todo", "Send the draft before midnight", happens_at=utc(2026, 11, 21, 4, 50), confidence=0.6),
        g.row(CAROL, "event", "Plant visit just after midnight", happens_at=utc(2026, 11, 21, 5, 10), confidence=0.9),
        g.row(CAROL, "goal", "Draft due to Jonah", happens_at=utc(2026, 11, 24, 5, 0), confidence=0.8),
        g.row(CAROL, "preference", "Prefers concise answers", confidence=0.95),
    ]
    g.embed_rows(rows)
    g.store.upsert_memories(rows)
    return g


SCOPE = ReadScope([CAROL.key], [])


def contents(rows):
    return [r["content"] for r in rows]


def test_a_date_bound_covers_the_whole_local_day(typed):
    on_9th = query_memories(typed.store, SCOPE, occurred_from="2026-11-09", occurred_to="2026-11-09", tz=TORONTO)
    assert contents(on_9th) == ["Evening call with Jonah"]
    on_10th_utc = query_memories(typed.store, SCOPE, occurred_from="2026-11-10", occurred_to="2026-11-10", tz=zone("UTC"))
    assert contents(on_10th_utc) == ["Morning interview with Okonkwo", "Evening call with Jonah"]


def test_happens_within_counts_from_now_across_midnight(typed):
    now = utc(2026, 11, 21, 4, 30)  # 23:30 on 20 November in Toronto
    soon = query_memories(typed.store, SCOPE, happens_within="1h", sort_by="scheduled", now=now, tz=TORONTO)
    assert contents(soon) == ["Send the draft before midnight", "Plant visit just after midnight"]
    week = query_memories(typed.store, SCOPE, happens_within="7d", sort_by="scheduled", now=now, tz=TORONTO)
    assert contents(week) == ["Send the draft before midnight", "Plant visit just after midnight", "Draft due to Jonah"]
    later = query_memories(typed.store, SCOPE, happens_within="7d", now=utc(2026, 11, 21, 5, 0), sort_by="scheduled")
    assert contents(later) == ["Plant visit just after midnight", "Draft due to Jonah"]


def test_type_filter_sort_and_limit(typed):
    by_conf = query_memories(typed.store, SCOPE, sort_by="confidence", max_results=2)
    assert contents(by_conf) == ["Prefers concise answers", "Plant visit just after midnight"]
    todos = query_memories(typed.store, SCOPE, memory_type="todo")
    assert contents(todos) == ["Send the draft before midnight"]
    recent = query_memories(typed.store, SCOPE, memory_type=["event"], sort_by="recent", occurred_from="2026-11-01")
    assert contents(recent) == ["Morning interview with Okonkwo", "Evening call with Jonah"]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"happens_within": "soon"}, "not a duration"),
        ({"sort_by": "random"}, "sort_by"),
        ({"max_results": 0}, "max_results"),
        ({"memory_type": "mood"}, "unknown memory_type"),
        ({"occurred_from": "last tuesday"}, "not ISO-8601"),
        # a day past what a window added to it can hold (it was an OverflowError)
        ({"occurred_to": "9999-12-31"}, "outside the years 1000-8999"),
        ({"occurred_from": "0001-01-01T00:00"}, "outside the years 1000-8999"),
    ],
)
def test_bad_filters_say_what_is_wrong(typed, kwargs, message):
    with pytest.raises(MemoryOperationError, match=message):
        query_memories(typed.store, SCOPE, **kwargs)


def test_durations():
    assert parse_duration("90m").total_seconds() == 5400
    assert parse_duration("2w").days == 14
