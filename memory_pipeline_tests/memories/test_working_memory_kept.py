"""The last working memory and bulletins made are kept on disk while nothing they are made of
changes.

Proves: asking again with nothing changed gives the same section without making it again (no
table read); a memory stored, updated or forgotten, another budget, a team's leader, the tenant's
timezone or a dated item falling due or coming within the time-sensitive days each make it again,
so a kept one is never what a new one would not be; forgetting a memory leaves none of its words
in a kept file; a damaged file is made again; a database on object storage keeps none; bulletins
are kept alike, the context bulletin (which names the minute) within its minute. Real
LanceDB under tmp_path, memories stored through the audited operations.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory_pipeline.config import get_settings
from memory_pipeline.embedding import HashEmbedder
from memory_pipeline.memories import bulletin as bulletins
from memory_pipeline.memories import context_file
from memory_pipeline.memories.operations import MemoryOperationError
from memory_pipeline.memories.service import MemoryService
from memory_pipeline.tenancy import Tenant

ALICE = Tenant("support-bot", "alice")
NOW = datetime(2026, 11, 20, 12, tzinfo=UTC)


@pytest.fixture
def service(root, lance_uri):
    (root / ALICE.agent_id / "users" / ALICE.user_id).mkdir(parents=True)
    settings = get_settings().model_copy(update={"root": str(root), "lancedb_uri": lance_uri})
    return MemoryService(ALICE.agent_id, ALICE.user_id, settings=settings, actor="test", embedder=HashEmbedder())


@pytest.fixture
def made(service, monkeypatch):
    """How many working memories were made (not read from the kept file)."""
    count = []
    make = MemoryService._working_memory

    def counted(self, *args):
        count.append(args)
        return make(self, *args)

    monkeypatch.setattr(MemoryService, "_working_memory", counted)
    return count


def test_asking_again_with_nothing_changed_reads_the_kept_one(service, made, lance_uri):
    stored = service.store_memory("preference", "Email only, no phone calls", occurred_at="2026-11-12T09:00")
    first = service.context(now=NOW)
    assert f"Email only, no phone calls (2026-11-12 09:00; facts/{stored['id']})" in first.markdown
    again = service.context(now=NOW + timedelta(hours=3))
    assert len(made) == 1
    assert again.to_dict() == first.to_dict()
    assert context_file.path(lance_uri, ALICE.key).is_file()
    # What the reader asks is part of what it was made from.
    assert service.context(token_budget=60, now=NOW).token_budget == 60
    assert service.context(max_recent=0, now=NOW).markdown == first.markdown
    assert len(made) == 3


def test_a_change_to_the_memory_makes_it_again(service, made):
    stored = service.store_memory("preference", "Email only, no phone calls", occurred_at="2026-11-12T09:00")
    service.context(now=NOW)
    added = service.store_memory("goal", "Migrate the database to PostgreSQL 16", occurred_at="2026-11-13T09:00")
    assert "Migrate the database to PostgreSQL 16" in service.context(now=NOW).markdown
    service.update_memory(added["id"], content="Migrate the database to PostgreSQL 17")
    text = service.context(now=NOW).markdown
    assert "PostgreSQL 17" in text and "PostgreSQL 16" not in text
    service.forget_memory(stored["id"], reason="asked to forget")
    assert "phone calls" not in service.context(now=NOW).markdown
    assert len(made) == 4


def test_forgetting_leaves_no_word_of_the_memory_in_a_kept_file(service, lance_uri):
    stored = service.store_memory("preference", "Prefers the codename Bluefin", occurred_at="2026-11-12T09:00")
    service.context(now=NOW)
    kept = context_file.path(lance_uri, ALICE.key)
    assert "Bluefin" in kept.read_text()
    service.forget_memory(stored["id"], reason="asked to forget")
    assert not kept.exists()


def test_a_dated_item_falling_due_or_coming_close_makes_it_again(service, made):
    service.store_memory("todo", "Send Alice the renewal statement", occurred_at="2026-11-10T09:00",
                         happens_at="2026-11-25T09:00")
    service.store_memory("event", "Cutover on Saturday 16 January", occurred_at="2026-11-18T09:00",
                         happens_at="2027-01-16T00:00")
    first = service.context(now=NOW).markdown
    assert "## Pending todos\n- Send Alice the renewal statement" in first
    assert "Time-sensitive" not in first and "## Recent\n- Cutover on Saturday 16 January" in first
    assert service.context(now=datetime(2026, 11, 25, 8, tzinfo=UTC)).markdown == first
    assert len(made) == 1
    after_due = service.context(now=datetime(2026, 11, 25, 10, tzinfo=UTC)).markdown
    assert "Pending todos" not in after_due
    close = service.context(now=datetime(2026, 12, 20, tzinfo=UTC)).markdown
    assert "- Cutover on Saturday 16 January (due 2027-01-16" in close.split("Time-sensitive")[1]
    # An earlier instant than the kept one was made at is never answered from it.
    assert service.context(now=NOW).markdown == first
    assert len(made) == 4


def test_the_timezone_and_the_team_are_part_of_what_it_is_made_from(service, made, root):
    service.store_memory("preference", "Email only, no phone calls", occurred_at="2026-11-12T09:00")
    assert "(2026-11-12 09:00;" in service.context(now=NOW).markdown
    (root / ALICE.agent_id / "users" / ALICE.user_id / "MEMORY.md").write_text("Timezone: Asia/Tokyo\n")
    # A new process reads the timezone again (a service reads it once).
    again = MemoryService(ALICE.agent_id, ALICE.user_id, settings=service.settings, actor="test", embedder=HashEmbedder())
    assert "(2026-11-12 18:00;" in again.context(now=NOW).markdown
    member = MemoryService("helper-bot", ALICE.user_id, actor="test", embedder=HashEmbedder(),
                           settings=service.settings.model_copy(update={"teams": {"helper-bot": ALICE.agent_id}}))
    assert "Email only" in member.context(now=NOW).markdown
    assert len(made) == 3


def test_a_damaged_file_is_made_again(service, made, lance_uri):
    service.store_memory("preference", "Email only, no phone calls", occurred_at="2026-11-12T09:00")
    first = service.context(now=NOW).markdown
    context_file.path(lance_uri, ALICE.key).write_text('{"made_from": ')
    assert service.context(now=NOW).markdown == first
    assert len(made) == 2
    assert service.context(now=NOW).markdown == first
    assert len(made) == 2


def test_a_database_on_object_storage_keeps_none(tmp_path):
    assert context_file.fingerprint("s3://bucket/lancedb", [tmp_path / "MEMORY.md"], {"budget": 1500}) is None
    assert context_file.read("s3://bucket/lancedb", ALICE.key, None, NOW) is None


@pytest.fixture
def bulletins_made(monkeypatch):
    count = []
    make = bulletins.made_bulletin

    def counted(*args, **kwargs):
        count.append(args[2])
        return make(*args, **kwargs)

    monkeypatch.setattr(bulletins, "made_bulletin", counted)
    return count


def test_bulletins_are_kept_alike(service, bulletins_made, lance_uri):
    service.store_memory("goal", "Migrate the database to PostgreSQL 16", occurred_at="2026-11-13T09:00",
                         happens_at="2026-11-30T09:00")
    service.store_memory("todo", "Send Alice the renewal statement", occurred_at="2026-11-10T09:00",
                         happens_at="2026-11-25T09:00")
    memory = service.bulletin("memory", now=NOW)
    assert "## Active Goals\n- Migrate the database to PostgreSQL 16" in memory
    assert service.bulletin("memory", now=NOW + timedelta(days=2)) == memory
    assert context_file.path(lance_uri, ALICE.key, "bulletin-memory").is_file()
    assert bulletins_made == ["memory"]
    # The context bulletin names the minute it is as of: kept within it, made again after it.
    context = service.bulletin("context", now=NOW)
    assert "_as of 2026-11-20 12:00 (UTC)_" in context and "Send Alice the renewal statement" in context
    assert service.bulletin("context", now=NOW + timedelta(seconds=50)) == context
    assert "_as of 2026-11-20 12:01 (UTC)_" in service.bulletin("context", now=NOW + timedelta(seconds=61))
    assert bulletins_made == ["memory", "context", "context"]
    # A goal past its date leaves the memory bulletin; another number per section is asked anew.
    assert "- Migrate the database" not in service.bulletin("memory", now=datetime(2026, 12, 1, tzinfo=UTC))
    service.bulletin("memory", per_section=2, now=datetime(2026, 12, 1, tzinfo=UTC))
    assert bulletins_made == ["memory", "context", "context", "memory", "memory"]
    with pytest.raises(MemoryOperationError, match="bulletin kind 'weekly'"):
        service.bulletin("weekly", now=NOW)
    assert sorted(p.name for p in context_file.path(lance_uri, ALICE.key).parent.iterdir()) == [
        "bulletin-context.json", "bulletin-memory.json"]
