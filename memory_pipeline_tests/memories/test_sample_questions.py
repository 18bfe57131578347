"""The questions of the typed-memories issue, asked of the sample workspace in data/agents.

Typed memories are extracted with spaCy from the real transcripts and notes, and alice's
knowledge graph is built by consolidation, so these tests prove the pieces answer together:
where alice lives and who her manager is at different dates, what carol's daughter's birthday
is, what is scheduled, and what the bulletins say.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from memory_pipeline.config import Settings
from memory_pipeline.embedding import HashEmbedder
from memory_pipeline.memories.operations import TypedMemories
from memory_pipeline.memories.pipeline import ingest_tenant
from memory_pipeline.memories.service import MemoryService
from memory_pipeline.tenancy import Tenant
from memory_pipeline_tests.helpers import copy_sample

pytestmark = pytest.mark.slow

ALICE = Tenant("support-bot", "alice")
CAROL = Tenant("research-assistant", "carol")


def utc(*args) -> datetime:
    return datetime(*args, tzinfo=UTC)


@pytest.fixture(scope="module")
def world(tmp_path_factory, minilm, nlp):
    """The sample workspace, its typed memories (alice, carol), alice's consolidated graph and
    both tenants' supersession records."""
    from memory_pipeline.consolidation.pipeline import build_graph, consolidate_episodes
    from memory_pipeline.consolidation.store import ConsolidationStore
    from memory_pipeline.consolidation.supersession import supersede_tenant

    base = tmp_path_factory.mktemp("graph_world")
    root = base / "agents"
    copy_sample(root)
    uri = str(base / "lancedb")
    typed = TypedMemories.open(uri, HashEmbedder())
    reports = {t.key: ingest_tenant(typed, root, t, now=utc(2026, 11, 22)) for t in (ALICE, CAROL)}
    store = ConsolidationStore(uri, typed.embedder.dim)
    consolidate_episodes(root, store, ALICE, None, typed.embedder, utc(2026, 11, 22), timedelta(minutes=30), timedelta(days=90))
    build_graph(root, store, ALICE, None, typed.embedder)
    for tenant in (ALICE, CAROL):
        supersede_tenant(root, uri, tenant, minilm, utc(2026, 11, 22), nlp=nlp)
    settings = Settings(root=str(root), lancedb_uri=uri, embedder="hash")
    return {"root": root, "uri": uri, "typed": typed, "reports": reports, "settings": settings}


def service(world, tenant: Tenant) -> MemoryService:
    return MemoryService(tenant.agent_id, tenant.user_id, settings=world["settings"], embedder=world["typed"].embedder)


def objects(found: dict, predicate: str) -> list[str]:
    return [r["object"] for r in found["relations"] if r["predicate"] == predicate]


def test_extraction_reads_both_sources_in_the_users_timezone(world):
    alice, carol = world["reports"][ALICE.key], world["reports"][CAROL.key]
    assert (alice.timezone, carol.timezone) == ("Europe/Lisbon", "America/Toronto")
    assert alice.files_extracted == 9 and carol.files_extracted == 5
    rows = world["typed"].store.memory_rows([ALICE.key, CAROL.key])
    assert set(rows["source"].to_list()) == {"markdown", "transcript"}
    assert {"identity", "preference", "event", "decision", "todo", "goal"} <= set(rows["memory_type"].to_list())


def test_where_alice_lives_changes_on_11_november(world):
    alice = service(world, ALICE)
    assert objects(alice.knowledge("Alice", as_of="2026-11-01"), "lives_in") == ["Lisbon"]
    assert objects(alice.knowledge("Alice", as_of="2026-11-20"), "lives_in") == ["Porto"]
    history = alice.knowledge("Alice", as_of="2026-11-20", include_history=True)
    lisbon = next(r for r in history["relations"] if r["object"] == "Lisbon")
    assert (lisbon["valid"], lisbon["valid_to"][:10]) == (False, "2026-11-11")


def test_alices_manager_is_dana_until_december_then_tomas(world):
    alice = service(world, ALICE)
    assert objects(alice.knowledge("Alice", as_of="2026-11-25"), "manager") == ["Dana Whitfield"]
    after = alice.knowledge("Alice", as_of="2026-12-05")
    assert objects(after, "manager") == ["Tomás Ribeiro"]
    tomas = next(r for r in after["relations"] if r["predicate"] == "manager")
    # Said on 18 November, valid from the date it names.
    assert (tomas["said_at"][:10], tomas["valid_from"][:10]) == ("2026-11-18", "2026-12-01")
    assert "Tomás Ribeiro" in after["neighbours"]


def test_next_tuesday_said_on_30_october_is_3_november(world):
    alice = service(world, ALICE)
    rows = alice.query(memory_type="event", occurred_from="2026-10-30", occurred_to="2026-10-30", max_results=20)
    board = next(r for r in rows if "presenting" in r["content"] and "board" in r["content"])
    assert board["happens_at"] == "2026-11-03T00:00:00+00:00"  # midnight in Lisbon (UTC+0 in winter)
    assert board["source"] == "transcript" and board["source_ref"].endswith("sess-20261030-tw02.jsonl#L7")


def test_carols_daughters_birthday_and_her_preferences(world):
    carol = service(world, CAROL)
    hits = carol.recall("When is my daughter Emma's birthday?", k=3, min_score=0.0)
    assert "March 14" in hits[0]["content"]
    assert hits[0]["happens_at"].startswith("2027-03-14")
    prefs = " ".join(r["content"] for r in carol.query(memory_type="preference", max_results=20))
    assert "concise answers" in prefs


def test_what_is_due_in_the_week_from_18_november(world):
    carol = service(world, CAROL)
    due = carol.query(happens_within="7d", sort_by="scheduled", now=utc(2026, 11, 18, 12), max_results=20)
    days = [r["happens_at"][:10] for r in due]
    assert days == sorted(days)
    assert "2026-11-22" in days and "2026-11-24" in days  # the reminder, then the new deadline
    assert all("2026-11-18" <= d <= "2026-11-25" for d in days)
    assert "2026-11-20" not in days  # the old deadline, moved on 10 November
    history = carol.query(happens_within="7d", now=utc(2026, 11, 18, 12), include_superseded=True, max_results=20)
    assert "2026-11-20" in [r["happens_at"][:10] for r in history]


def test_bulletins_for_a_system_prompt(world):
    alice = service(world, ALICE)
    memory = alice.bulletin("memory")
    for section in ("## Identity", "## Active Goals", "## Preferences", "## Recent Events", "## Recent Decisions"):
        assert section in memory
    assert "Porto" in memory and "dark mode" in memory
    assert all(len(block.strip().splitlines()) <= 6 for block in memory.split("## ")[1:])
    context = alice.bulletin("context", per_section=8, now=utc(2026, 11, 18, 9))
    assert context.index("## Pending Todos") < context.index("## Time-Sensitive")
    soon = context.split("## Time-Sensitive")[1]
    assert "2026-11-24: " in soon and "Marco" in soon  # the call requested for Tuesday 24 November
    assert "2026-12-01: " in soon and "Tomás" in soon
    # The cutover was moved from 21 to 28 November, then to 5 December: only 5 December is left.
    assert "2026-11-21: " not in soon and "2026-11-28: " not in soon and "2026-12-05: " in soon
    carol = service(world, CAROL).bulletin("context", now=utc(2026, 11, 12, 14))
    assert "2026-11-24: " in carol and "2026-11-20: " not in carol  # the deadline moved
    # An item told in a session and written in a note (or the profile) is listed once.
    preferences = memory.split("## Preferences")[1].split("## ")[0]
    assert preferences.count("dark mode") == 1
    assert carol.split("## Time-Sensitive")[0].count("photos") == 1


def test_ingest_is_incremental_and_a_forgotten_memory_stays_forgotten(world, tmp_path):
    typed = world["typed"]
    again = ingest_tenant(typed, world["root"], CAROL, now=utc(2026, 11, 22))
    assert (again.files_extracted, again.files_unchanged, again.memories_written) == (0, 5, 0)

    carol = service(world, CAROL)
    emma = carol.recall("trick-or-treating with Emma", k=1, min_score=0.0)[0]
    carol.forget_memory(emma["id"], reason="not needed")
    note = Path(world["root"]) / "research-assistant/sessions/carol/sess-20261031-cm01.jsonl"
    note.write_text(note.read_text() + "\n", encoding="utf-8")  # changed bytes, same content
    stores_before = typed.store.audit_rows(CAROL.key).filter(pl.col("op") == "store").height
    rerun = ingest_tenant(typed, world["root"], CAROL, now=utc(2026, 11, 22))
    assert rerun.files_extracted == 1 and rerun.blocked == 1
    assert typed.store.get_memory(CAROL.key, emma["id"]) is None
    # The memories read again are the same rows: no new store in the audit.
    assert typed.store.audit_rows(CAROL.key).filter(pl.col("op") == "store").height == stores_before
