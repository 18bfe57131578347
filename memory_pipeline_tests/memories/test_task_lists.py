"""Task lists in notes, as a user keeps them and runs the commands: ``- [ ]`` is a todo whatever its
words, and a later note ticking it off (``- [x]``, or the item struck through) ends it, so the
working memory and the typed queries show what is still to do and the day the rest was done."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import dagster as dg
import pytest

from memory_pipeline.config import get_settings
from memory_pipeline.memories.assets import typed_memories_job, typed_memory_assets
from memory_pipeline.tenancy import Tenant
from memory_pipeline.text.memory_types import DONE, OPEN, markdown_passages
from memory_pipeline.timeline.statements import tenant_statements
from memory_pipeline.timeline.tasks import ticked_off
from memory_pipeline_tests.cli_env import cli_app, run
from memory_pipeline_tests.helpers import make_resources, write

WHO = ["--agent", "bot", "--user", "maya"]


@pytest.fixture
def app(root, lance_uri, tmp_path, monkeypatch):
    write(root, "bot/users/maya/memory/2026-11-20.md", (
        "# Friday\n\n## Todo\n"
        "- [ ] Send Fiona the revised abstract\n"
        "- [ ] Book the venue for the offsite\n"
        "- [ ] Water the plants\n"
    ))
    write(root, "bot/users/maya/memory/2026-11-23.md", (
        "# Monday\n\n"
        "- [x] Send Fiona the revised abstract.\n"
        "- ~~Book the venue for the offsite~~\n"
        "- [ ] Call the plumber about the boiler on 2026-11-26\n"
    ))
    defs = dg.Definitions(assets=typed_memory_assets, jobs=[typed_memories_job], resources=make_resources(root, lance_uri))
    yield cli_app(monkeypatch, root, lance_uri, tmp_path / "dagster_home", defs)
    get_settings.cache_clear()


def _todos(app) -> list[str]:
    return sorted(m["content"] for m in json.loads(run(app, "memories", "query", *WHO, "--type", "todo", "--json")))


@pytest.mark.slow  # the spaCy model reads the notes
def test_a_ticked_task_leaves_the_todos_and_is_recorded_as_done(app, root):
    assert json.loads(run(app, "memories", "ingest", *WHO, "--json"))["success"]
    assert _todos(app) == ["Call the plumber about the boiler on 2026-11-26", "Water the plants"]
    context = run(app, "context", *WHO, "--now", "2026-11-24T09:00")
    pending = context.split("## Pending todos\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert [line.split(" (", 1)[0] for line in pending] == [
        "- Call the plumber about the boiler on 2026-11-26", "- Water the plants"]
    assert "- Done: Send Fiona the revised abstract. (2026-11-23" in context
    assert "- Done: Book the venue for the offsite (2026-11-23" in context

    # Opened again (the box unticked): to do again at the next run.
    write(root, "bot/users/maya/memory/2026-11-23.md", (
        "# Monday\n\n- [ ] Send Fiona the revised abstract\n- ~~Book the venue for the offsite~~\n"
    ))
    assert json.loads(run(app, "memories", "ingest", *WHO, "--json"))["success"]
    assert _todos(app) == ["Send Fiona the revised abstract", "Water the plants"]  # (said twice, listed once)


def test_task_items_are_read_with_their_box_and_the_box_left_out():
    note = (
        "## Todo\n- [ ] Send Fiona the revised abstract\n1. [X] call the plumber about the boiler\n"
        "- ~~Book the venue for the offsite~~\n- ~~Tuesday~~ Wednesday is the offsite day\n"
        "- [x] Email Marco about the\n  Growth plan renewal\n- [ ]\n- plain bullet about the standup time\n"
    )
    read = [(p.task, p.text, p.source_ref) for p in markdown_passages(note, "bot/memory/2026-11-22.md", UTC, datetime.now(UTC))]
    assert read == [
        (OPEN, "Send Fiona the revised abstract", "bot/memory/2026-11-22.md#L2"),
        (DONE, "call the plumber about the boiler", "bot/memory/2026-11-22.md#L3"),
        (DONE, "Book the venue for the offsite", "bot/memory/2026-11-22.md#L4"),
        (None, "~~Tuesday~~ Wednesday is the offsite day", "bot/memory/2026-11-22.md#L5"),  # struck in part: no task
        (DONE, "Email Marco about the Growth plan renewal", "bot/memory/2026-11-22.md#L6"),
        (None, "plain bullet about the standup time", "bot/memory/2026-11-22.md#L9"),
    ]


def test_only_a_later_tick_of_the_same_words_ends_an_open_task(root):
    write(root, "bot/users/maya/MEMORY.md", "- [ ] Renew the passport\n- [x] Learn Portuguese\n")
    write(root, "bot/users/maya/memory/2026-11-20.md", "- [ ] Send Fiona the revised abstract\n- [x] Learn Portuguese\n")
    write(root, "bot/users/maya/memory/2026-11-23.md", (
        "- [x] send fiona the revised abstract!\n- [x] Renew the passport\n- [x] Send Fiona the abstract\n"
    ))
    write(root, "bot/users/maya/memory/2026-11-19.md", "- [x] Book the venue\n")
    write(root, "bot/users/maya/memory/2026-11-21.md", "- [ ] Book the venue\n")
    ended = {(old.ref, new.ref) for old, new in ticked_off(tenant_statements(root, Tenant("bot", "maya")))}
    assert ended == {
        ("bot/users/maya/memory/2026-11-20.md#L1", "bot/users/maya/memory/2026-11-23.md#L1"),  # case and a "!" aside
        ("bot/users/maya/MEMORY.md#L1", "bot/users/maya/memory/2026-11-23.md#L2"),  # a profile's task, done since
    }  # not other words, not a tick before the task was written, not a task ticked before it was opened
