"""Session completion: a transcript is complete on its `session.completed` line or after the idle
timeout, never before; half-written and malformed transcripts still yield their good lines."""

from datetime import UTC, datetime, timedelta

from memory_pipeline.episodes.sessions import (
    COMPLETED_BY_IDLE,
    COMPLETED_BY_MARKER,
    session_files,
    tenant_sessions,
)
from memory_pipeline.tenancy import Tenant
from memory_pipeline_tests.helpers import write
from memory_pipeline_tests.helpers.consolidation import jsonl, say

IDLE = timedelta(minutes=30)
TENANT = Tenant("bot", "ann")
NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def test_marker_completes_on_its_timestamp(root):
    write(root, "bot/sessions/ann/s1.jsonl", jsonl(say("user", "Hello there, I live in Oslo.", "2026-11-19T23:50:00Z"), completed="2026-11-20T00:10:00Z"))
    found = tenant_sessions(root, TENANT, NOW, IDLE)
    (session,) = found.complete
    assert session.completed_by == COMPLETED_BY_MARKER
    assert session.day == "2026-11-20"
    assert session.source_id == "bot/ann/s1#c0"


def test_idle_timeout_completes_at_last_activity_and_not_before(root):
    write(root, "bot/sessions/ann/s1.jsonl", jsonl(say("user", "Are you there?", "2026-11-20T11:40:00Z")))
    assert not tenant_sessions(root, TENANT, NOW, IDLE).complete  # 20 minutes idle: still open
    later = tenant_sessions(root, TENANT, NOW + timedelta(minutes=15), IDLE)
    (session,) = later.complete
    assert session.completed_by == COMPLETED_BY_IDLE
    assert session.completed_at == datetime(2026, 11, 20, 11, 40, tzinfo=UTC)


def test_half_written_and_malformed_lines_are_skipped_with_reasons(root):
    text = (
        jsonl(say("user", "My name is Ann and I moved to Bergen.", "2026-11-01T10:00:00Z"))
        + "not json at all\n"
        + '{"role": "assistant", "content": "Noted.", "ts": "2026-11-01T10:00:05Z"}\n'
        + '{"role": "user", "content": "and th'  # the agent is still writing this line
    )
    write(root, "bot/sessions/ann/s1.jsonl", text)
    (session,) = tenant_sessions(root, TENANT, NOW, IDLE).complete
    assert [t.content for t in session.transcript.turns] == ["My name is Ann and I moved to Bergen.", "Noted."]
    reasons = dict(session.transcript.skipped)
    assert "not valid JSON" in reasons[2]
    assert "incomplete last line" in reasons[4]


def test_empty_and_other_files_are_ignored(root):
    write(root, "bot/sessions/ann/empty.jsonl", "")
    write(root, "bot/sessions/ann/notes.txt", "not a transcript")
    write(root, "bot/sessions/ann/.hidden.jsonl", jsonl(say("user", "x y z", "2026-11-01T10:00:00Z")))
    assert [f.session_id for f in session_files(root, TENANT)] == ["empty"]
    found = tenant_sessions(root, TENANT, NOW, IDLE)
    assert not found.complete and not found.unreadable  # nothing said: nothing to consolidate


def test_days_filter_selects_sessions_completed_that_day(root):
    write(root, "bot/sessions/ann/a.jsonl", jsonl(say("user", "First day", "2026-11-01T10:00:00Z"), completed="2026-11-01T10:05:00Z"))
    write(root, "bot/sessions/ann/b.jsonl", jsonl(say("user", "Second day", "2026-11-02T10:00:00Z"), completed="2026-11-02T10:05:00Z"))
    found = tenant_sessions(root, TENANT, NOW, IDLE, days={"2026-11-02"})
    assert [s.file.session_id for s in found.complete] == ["b"]
