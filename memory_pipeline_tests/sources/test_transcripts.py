"""parse_transcript reads session JSONL the way agents really write it, and never raises.

Transcripts are read while an agent may still be appending to them, so the parser must keep
every good line (with its exact line number, for citations), record each bad line with a reason
instead of failing the session, and normalise every timestamp to aware UTC so that sessions can
be assigned to the right day partition.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from memory_pipeline.sources.transcripts import Transcript, Turn, parse_timestamp, parse_transcript


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=timezone.utc)


def jsonl(*records: object) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def test_message_lines_become_turns_with_their_line_numbers():
    text = jsonl(
        {"role": "user", "content": "I moved", "ts": "2026-11-03T09:14:00Z", "turn_id": "t1"},
        {"type": "message", "role": "Caroline", "content": "Nice!", "ts": "2026-11-03T09:15:30Z"},
    )
    assert parse_transcript(text) == Transcript(
        turns=(
            Turn(1, "user", "I moved", utc(2026, 11, 3, 9, 14), "t1"),
            Turn(2, "Caroline", "Nice!", utc(2026, 11, 3, 9, 15, 30), None),
        ),
        compactions=(),
        completed_at=None,
        skipped=(),
    )


def test_blank_lines_are_ignored_but_still_counted():
    text = "\n" + json.dumps({"role": "user", "content": "a"}) + "\n   \n\n" + json.dumps(
        {"role": "assistant", "content": "b"}
    ) + "\n\n"
    parsed = parse_transcript(text)
    assert [t.line for t in parsed.turns] == [2, 5]
    assert parsed.skipped == ()


def test_crlf_line_endings_keep_line_numbers():
    text = jsonl({"role": "user", "content": "a"}, {"role": "user", "content": "b"}).replace(
        "\n", "\r\n"
    )
    parsed = parse_transcript("\ufeff" + text)  # a BOM must not cost the first line
    assert [(t.line, t.content) for t in parsed.turns] == [(1, "a"), (2, "b")]
    assert parsed.skipped == ()


def test_list_content_joins_text_parts_and_ignores_the_rest():
    text = jsonl(
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "First part."},
                {"type": "image", "source": {"data": "..."}},
                {"type": "tool_use", "name": "search"},
                {"type": "text", "text": "Second part."},
            ],
        },
        {"role": "user", "content": [{"type": "image"}]},
    )
    parsed = parse_transcript(text)
    assert [t.content for t in parsed.turns] == ["First part.\nSecond part."]
    assert parsed.skipped == ((2, "empty 'content'"),)


def test_malformed_lines_are_skipped_with_line_and_reason():
    lines = [
        json.dumps({"role": "user", "content": "kept", "turn_id": "t1"}),
        "this is not json",
        "[1, 2, 3]",
        json.dumps({"role": "user"}),
        json.dumps({"role": "user", "content": "   "}),
        json.dumps({"role": "user", "content": 42}),
        json.dumps({"content": "no speaker"}),
        json.dumps({"role": ["x"], "content": "bad speaker"}),
        json.dumps({"role": "user", "content": "bad id", "turn_id": {"a": 1}}),
        json.dumps({"type": "tool_result", "role": "tool", "content": "unknown type"}),
        json.dumps({"type": 3, "role": "user", "content": "type is a number"}),
        json.dumps({"type": "compaction", "summary": ""}),
        "null",
        json.dumps({"role": "user", "content": "also kept", "turn_id": 7}),
    ]
    parsed = parse_transcript("\n".join(lines) + "\n")
    assert [(t.line, t.content, t.turn_id) for t in parsed.turns] == [
        (1, "kept", "t1"),
        (14, "also kept", "7"),
    ]
    reasons = dict(parsed.skipped)
    assert sorted(reasons) == list(range(2, 14))
    assert reasons[2].startswith("not valid JSON")
    assert reasons[3] == "expected a JSON object, got a list"
    assert reasons[4] == "missing 'content'"
    assert reasons[5] == "empty 'content'"
    assert reasons[6] == "'content' must be a string or a list of parts, not a number"
    assert reasons[7] == "missing 'role'"
    assert reasons[8] == "'role' must be a non-empty string"
    assert reasons[9] == "'turn_id' must be a string, not an object"
    assert reasons[10] == "unknown line type 'tool_result'"
    assert reasons[11] == "'type' must be a string, not a number"
    assert reasons[12] == "compaction without a non-empty 'summary' string"
    assert reasons[13] == "expected a JSON object, got null"


def test_truncated_last_line_is_skipped_not_raised():
    full = jsonl(
        {"role": "user", "content": "one", "ts": "2026-11-03T09:00:00Z"},
        {"role": "assistant", "content": "two", "ts": "2026-11-03T09:01:00Z"},
    )
    partial = full + '{"role": "user", "content": "thr'
    parsed = parse_transcript(partial)
    assert [t.content for t in parsed.turns] == ["one", "two"]
    assert len(parsed.skipped) == 1
    line, reason = parsed.skipped[0]
    assert line == 3 and reason.startswith("incomplete last line")
    # Once the writer finishes the line, the same file parses completely.
    done = parse_transcript(partial + 'ee"}\n')
    assert [t.content for t in done.turns] == ["one", "two", "three"] and done.skipped == ()


def test_compaction_and_completed_lines():
    text = jsonl(
        {"role": "user", "content": "plan the trip", "ts": "2026-11-03T09:00:00Z", "turn_id": "a"},
        {"type": "compaction", "summary": "A trip to Porto.", "ts": "2026-11-03T10:00:00+01:00"},
        {"role": "assistant", "content": "done", "ts": "2026-11-03T09:30:00Z", "turn_id": "b"},
        {"type": "session.completed", "ts": "2026-11-03T11:00:00Z"},
    )
    parsed = parse_transcript(text)
    assert parsed.compactions == ((2, "A trip to Porto.", utc(2026, 11, 3, 9)),)
    assert parsed.completed_at == utc(2026, 11, 3, 11)
    assert parsed.last_activity == utc(2026, 11, 3, 11)
    assert [t.turn_id for t in parsed.turns] == ["a", "b"]


def test_completed_without_ts_takes_the_last_turn_time():
    text = jsonl(
        {"role": "user", "content": "hi", "ts": "2026-11-03T09:00:00Z"},
        {"role": "assistant", "content": "hello", "ts": "2026-11-03T09:05:00Z"},
        {"role": "user", "content": "no time on this one"},
        {"type": "session.completed"},
    )
    parsed = parse_transcript(text)
    assert parsed.completed_at == utc(2026, 11, 3, 9, 5)
    assert parsed.last_activity == utc(2026, 11, 3, 9, 5)


def test_open_session_has_no_completion_and_empty_file_has_nothing():
    assert parse_transcript(jsonl({"role": "user", "content": "hi"})).completed_at is None
    assert parse_transcript("") == Transcript((), (), None, ())
    assert parse_transcript("\n \n").last_activity is None


def test_timestamps_are_aware_utc():
    assert parse_timestamp("2026-11-03T09:14:00Z") == utc(2026, 11, 3, 9, 14)
    assert parse_timestamp("2026-11-03T10:14:00+01:00") == utc(2026, 11, 3, 9, 14)
    assert parse_timestamp("2026-11-03 09:14:00") == utc(2026, 11, 3, 9, 14)  # naive = UTC
    assert parse_timestamp("2026-11-03T09:14:00.123456789Z") == utc(2026, 11, 3, 9, 14, 0, 123456)
    assert parse_timestamp("Tue, 03 Nov 2026 09:14:00 GMT") == utc(2026, 11, 3, 9, 14)
    assert parse_timestamp(1793697240) == utc(2026, 11, 3, 9, 14)
    assert parse_timestamp(1793697240.5) == utc(2026, 11, 3, 9, 14, 0, 500000)
    assert parse_timestamp(1793697240000) == utc(2026, 11, 3, 9, 14)  # milliseconds
    assert parse_timestamp("1793697240") == utc(2026, 11, 3, 9, 14)
    bad_values = ("", "soon", "May 5", "2026-13-45", True, None, [], {}, float("nan"), 1e300)
    for bad in bad_values:
        assert parse_timestamp(bad) is None, bad
    assert parse_timestamp("2026-11-03T09:14:00Z").tzinfo is timezone.utc


def test_unparseable_ts_keeps_the_turn():
    parsed = parse_transcript(jsonl({"role": "user", "content": "hi", "ts": "yesterday-ish"}))
    assert parsed.turns[0].ts is None and parsed.skipped == ()


def test_odd_json_does_not_raise():
    text = "\n".join(
        [
            "[" * 100_000,  # deeper than the JSON decoder's recursion limit
            '{"role": "user", "content": "x", "ts": NaN}',
            '{"role": "user", "content": "x", "ts": Infinity}',
            '{"role": "user", "content": "x", "ts": ' + "9" * 5000 + "}",
            '{"role": "user", "content": "\\ud800 lone surrogate"}',
        ]
    )
    parsed = parse_transcript(text)
    assert [t.line for t in parsed.turns] == [2, 3, 5]
    assert all(t.ts is None for t in parsed.turns)
    assert [line for line, _ in parsed.skipped] == [1, 4]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(
        st.sampled_from(["role", "content", "ts", "turn_id", "type", "summary", "text"])
        | st.text(max_size=5),
        children,
        max_size=6,
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_any_text_parses_without_raising(text):
    parsed = parse_transcript(text)
    line_count = text.count("\n") + text.count("\r") + 1  # an upper bound on line numbers
    for turn in parsed.turns:
        assert 1 <= turn.line <= line_count and turn.content.strip()
    for line, reason in parsed.skipped:
        assert 1 <= line <= line_count and reason


@settings(max_examples=300, deadline=None)
@given(st.lists(json_values, max_size=8), st.booleans())
def test_any_json_lines_parse_without_raising(records, cut_last):
    text = "\n".join(json.dumps(r) for r in records)
    if cut_last and text:
        text = text[: len(text) // 2 + 1]
    parsed = parse_transcript(text)
    lines = [t.line for t in parsed.turns]
    assert lines == sorted(set(lines))
    for turn in parsed.turns:
        assert turn.ts is None or turn.ts.tzinfo is timezone.utc
    assert parsed.last_activity is None or parsed.last_activity.tzinfo is not None
