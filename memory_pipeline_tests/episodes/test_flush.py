"""flush(messages, agent, user): key facts, preferences, decisions and action items appended to the
tenant's dated note, secrets scrubbed, nothing appended twice, no path outside the root."""

from datetime import UTC, datetime

import pytest

from memory_pipeline.episodes.flush import flush
from memory_pipeline.tenancy import InvalidTenantError
from memory_pipeline_tests.helpers import write

NOW = datetime(2026, 11, 20, 14, 3, tzinfo=UTC)
MESSAGES = [
    {"role": "user", "content": "I prefer email over calls. We decided to launch Falcon on 5 December."},
    {"role": "assistant", "content": "Noted. I'll send the rollout checklist by Friday."},
    {"role": "user", "content": "Rui Santos owns the loader and it peaks at 1,600 req/min. My token is ghp_abcdefghijklmnopqrstuvwxyz0123456789."},
    {"role": "user", "content": "ok thanks"},
    "Remember that I work from Porto on Mondays.",
]


def test_flush_appends_sections_once(root):
    write(root, "bot/users/ann/memory/2026-11-20.md", "# 2026-11-20\n\nWritten by hand.\n")
    result = flush(MESSAGES, "bot", "ann", root=root, now=NOW)
    text = result.path.read_text()
    assert result.path == root / "bot/users/ann/memory/2026-11-20.md"
    assert text.startswith("# 2026-11-20\n\nWritten by hand.\n")
    assert "## Flushed at 14:03 UTC" in text
    assert "### Preferences\n\n- I prefer email over calls." in text
    assert "### Decisions\n\n- We decided to launch Falcon on 5 December." in text
    assert "### Action items\n\n- I'll send the rollout checklist by Friday." in text
    assert "Rui Santos owns the loader" in text.split("### Key facts")[1]
    assert "Remember that I work from Porto on Mondays." in text
    assert "ghp_abcdefghij" not in text and result.secrets_redacted == 1
    assert "ok thanks" not in text
    again = flush(MESSAGES, "bot", "ann", root=root, now=NOW)
    assert again.total == 0 and again.path.read_text() == text


def test_flush_creates_the_agent_wide_note(root):
    result = flush(["We agreed to freeze deploys from 26 November."], "bot", "_global", root=root, now=NOW)
    assert result.path == root / "bot/memory/2026-11-20.md"
    assert result.path.read_text().startswith("# 2026-11-20\n")
    assert result.added == {"decision": 1}


def test_flush_refuses_ids_that_leave_the_root(root):
    with pytest.raises(InvalidTenantError):
        flush(["I prefer tea."], "bot", "../../etc", root=root, now=NOW)


def test_a_team_members_flush_is_refused_and_writes_nothing(root, monkeypatch):
    from memory_pipeline.config import get_settings
    from memory_pipeline.recall.scope import ReadOnlyError

    write(root, "bot/users/ann/MEMORY.md", "# Ann\n")
    monkeypatch.setenv("MEMORY_PIPELINE_TEAMS", '{"bot-intern": "bot"}')
    get_settings.cache_clear()
    try:
        with pytest.raises(ReadOnlyError, match="^memory is read-only for team members$"):
            flush(["We decided to launch Falcon on 5 December."], "bot-intern", "ann", root=root, now=NOW)
    finally:
        get_settings.cache_clear()
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) == ["bot", "bot/users", "bot/users/ann", "bot/users/ann/MEMORY.md"]
