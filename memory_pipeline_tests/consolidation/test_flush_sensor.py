"""Proves: the compaction flush runs as a pipeline stage.

Over ticks of a live transcript that grows, the ``flush_sensor`` requests nothing below the
threshold (50 messages), one flush for the tenant when the session passes it, nothing on the next
tick, and nothing when it grows without passing the next multiple. The run it requests appends the
key facts, preferences, decisions and action items of those turns (no small talk) to the tenant's
dated note, and the workspace sensor then requests the index run that indexes the note.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import dagster as dg

from memory_pipeline.consolidation import sensors
from memory_pipeline.consolidation.notes_assets import compaction_flush
from memory_pipeline.consolidation.sensors import flush_sensor
from memory_pipeline.episodes.live_flush import FlushThresholds, crossing, since_last_compaction
from memory_pipeline.l0.sensors import workspace_sensor
from memory_pipeline.orchestration.partitions import SESSION_TENANTS_PARTITION
from memory_pipeline.orchestration.resources import WorkspaceResource
from memory_pipeline.sources.transcripts import parse_transcript
from memory_pipeline_tests.helpers.consolidation import iso, jsonl, say

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
TENANT = "bot~ann"
LIVE = "bot/sessions/ann/live.jsonl"
TALK = [
    ("user", "Good morning, Sam! How was your weekend in Lisbon?"),
    ("assistant", "Lovely, thanks. What are we working on today?"),
    ("user", "Thanks so much, Sam, have a great day with Dana tomorrow."),
    ("assistant", "Happy to help."),
]
FACTS = [
    ("user", "I prefer email over calls for anything about the Falcon launch."),
    ("user", "We decided to move the Falcon launch to 5 December."),
    ("assistant", "I'll send the revised rollout checklist by Friday."),
    ("user", "Rui Santos owns the load balancer and it peaks at 1,600 requests per minute."),
]


def messages(count: int, start: int = 0) -> list[dict]:
    """``count`` turns, small talk throughout and the facts once, a minute apart, ending a minute ago."""
    turns = [TALK[i % len(TALK)] for i in range(start, start + count)]
    if start == 0:
        turns[10:10 + len(FACTS)] = FACTS
    first = NOW - timedelta(minutes=start + count)
    return [say(role, text, iso(first + timedelta(minutes=i))) for i, (role, text) in enumerate(turns)]


def tick(sensor, instance, cursor, root) -> dg.SensorResult:
    context = dg.build_sensor_context(instance=instance, cursor=cursor, resources={"workspace": WorkspaceResource(root=str(root))})
    return sensor(context)


def test_thresholds_count_messages_and_tokens_since_the_last_compaction():
    text = jsonl(*messages(60)) + json.dumps({"type": "compaction", "summary": "earlier", "ts": iso(NOW)}) + "\n"
    text += jsonl(say("user", "x" * 400, iso(NOW)))
    turns = since_last_compaction(parse_transcript(text))
    assert crossing(turns, FlushThresholds(messages=50, tokens=100)) == (1, 100, 1)
    assert crossing(turns, FlushThresholds(messages=50, tokens=101)) == (1, 100, 0)


def test_flush_sensor_over_ticks_of_a_growing_live_transcript(root, instance, monkeypatch):
    monkeypatch.setattr(sensors, "utcnow", lambda: NOW)
    path = root / LIVE
    path.parent.mkdir(parents=True)
    path.write_text(jsonl(*messages(30)))
    l0_before = tick(workspace_sensor, instance, None, root)

    below = tick(flush_sensor, instance, None, root)
    assert below.run_requests == [] and "no live session past a flush threshold" in below.skip_reason.skip_message
    assert json.loads(below.cursor)["live"][LIVE][1:] == [0, 0, 0]

    with path.open("a") as handle:  # 60 messages: past 50
        handle.write(jsonl(*messages(30, start=30)))
    due = tick(flush_sensor, instance, below.cursor, root)
    assert [r.partition_key for r in due.run_requests] == [TENANT]
    request = due.run_requests[0]
    assert request.run_config == {"ops": {"compaction_flush": {"config": {"sessions": [{"path": LIVE, "start": 0, "end": 60}]}}}}
    assert request.tags["memory_pipeline/trigger"] == "flush_sensor"
    assert due.dynamic_partitions_requests[0].partitions_def_name == SESSION_TENANTS_PARTITION

    assert tick(flush_sensor, instance, due.cursor, root).run_requests == []
    with path.open("a") as handle:  # 70 messages: the next crossing is at 100
        handle.write(jsonl(*messages(10, start=60)))
    assert tick(flush_sensor, instance, due.cursor, root).run_requests == []

    instance.add_dynamic_partitions(SESSION_TENANTS_PARTITION, [TENANT])
    result = dg.materialize(
        [compaction_flush], instance=instance, partition_key=TENANT, run_config=request.run_config,
        resources={"workspace": WorkspaceResource(root=str(root))},
    )
    notes = list((root / "bot" / "users" / "ann" / "memory").glob("*.md"))
    assert len(notes) == 1
    note = notes[0].read_text()
    assert "### Preferences\n\n- I prefer email over calls for anything about the Falcon launch." in note
    assert "### Decisions\n\n- We decided to move the Falcon launch to 5 December." in note
    assert "- I'll send the revised rollout checklist by Friday." in note
    assert "Rui Santos owns the load balancer" in note.split("### Key facts")[1]
    for small_talk in ("Good morning", "Lisbon", "Thanks so much", "Lovely", "Happy to help"):
        assert small_talk not in note
    meta = result.asset_materializations_for_node("compaction_flush")[0].metadata
    assert (meta["sessions_flushed"].value, meta["lines_added"].value) == (1, 4)

    # Flushing the same turns again appends nothing.
    again = dg.materialize(
        [compaction_flush], instance=instance, partition_key=TENANT, run_config=request.run_config,
        resources={"workspace": WorkspaceResource(root=str(root))},
    )
    assert again.asset_materializations_for_node("compaction_flush")[0].metadata["lines_added"].value == 0
    assert notes[0].read_text() == note

    # The workspace sensor sees the new note and requests the tenant's index run.
    l0_after = tick(workspace_sensor, instance, l0_before.cursor, root)
    assert [r.partition_key for r in l0_after.run_requests] == [TENANT]
