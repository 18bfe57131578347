"""The workspace sensor over several ticks, with build_sensor_context on a real instance.

Proves: the first tick registers every tenant (and the tenants with transcripts as session
tenants), requests one run each and observes the sources of each; a tick with no change requests
and observes nothing and says why; a changed file requests exactly its tenant and observes its
sources with their file counts and bytes; a vanished tenant gets one run to remove its chunks,
and once that run has succeeded the next tick deletes its partition and forgets it; a 10,000-file
workspace gives one request per tenant.
"""

from __future__ import annotations

import json
import os
import shutil
import time

import dagster as dg

from memory_pipeline.l0.sensors import workspace_sensor
from memory_pipeline.orchestration.partitions import SESSION_TENANTS_PARTITION, TENANTS_PARTITION
from memory_pipeline.orchestration.resources import WorkspaceResource
from memory_pipeline_tests.helpers import write


def tick(instance, root, cursor=None):
    context = dg.build_sensor_context(
        instance=instance, cursor=cursor, resources={"workspace": WorkspaceResource(root=str(root))}
    )
    return workspace_sensor(context)


def test_ticks_register_request_and_skip(instance, root):
    write(root, "bot/MEMORY.md", "# Bot\n")
    write(root, "bot/users/alice/MEMORY.md", "# Alice\n")
    write(root, "bot/sessions/bob/s1.jsonl", '{"role": "user", "content": "hi"}\n')
    write(root, "other/memory/2026-01-01.md", "# Day\n")

    first = tick(instance, root)
    keys = ["bot~_global", "bot~alice", "bot~bob", "other~_global"]
    assert sorted(r.partition_key for r in first.run_requests) == keys
    assert [(r.partitions_def_name, r.partition_keys) for r in first.dynamic_partitions_requests] == [
        (TENANTS_PARTITION, keys), (SESSION_TENANTS_PARTITION, ["bot~bob"])
    ]
    observed = {(e.asset_key.to_user_string(), e.partition): e.metadata["files"].value for e in first.asset_events}
    assert observed == {
        ("markdown_memory", "bot~_global"): 1, ("markdown_memory", "bot~alice"): 1,
        ("markdown_memory", "other~_global"): 1, ("session_transcripts", "bot~bob"): 1,
    }
    instance.add_dynamic_partitions(TENANTS_PARTITION, keys)
    instance.add_dynamic_partitions(SESSION_TENANTS_PARTITION, ["bot~bob"])

    second = tick(instance, root, first.cursor)
    assert second.run_requests == [] and not second.dynamic_partitions_requests and not second.asset_events
    assert "no change" in second.skip_reason.skip_message
    assert second.cursor == first.cursor

    path = write(root, "bot/users/alice/MEMORY.md", "# Alice\n\nNew fact.\n")
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 1_000_000))
    third = tick(instance, root, second.cursor)
    assert [r.partition_key for r in third.run_requests] == ["bot~alice"]
    assert third.run_requests[0].run_key != first.run_requests[1].run_key
    [seen] = third.asset_events
    assert (seen.asset_key.to_user_string(), seen.partition, seen.metadata["bytes"].value) == (
        "markdown_memory", "bot~alice", len("# Alice\n\nNew fact.\n")
    )

    shutil.rmtree(root / "other")
    fourth = tick(instance, root, third.cursor)
    assert [r.partition_key for r in fourth.run_requests] == ["other~_global"]
    assert json.loads(fourth.cursor)["other~_global"] == "gone"
    fifth = tick(instance, root, fourth.cursor)
    assert (fifth.run_requests, fifth.dynamic_partitions_requests, fifth.cursor) == ([], [], fourth.cursor)

    @dg.op
    def remove_chunks() -> None:
        return None

    @dg.job
    def cleanup():  # stands for the L0 run the sensor requested, with the run key Dagster tags it with
        remove_chunks()

    assert cleanup.execute_in_process(instance=instance, tags={"dagster/run_key": fourth.run_requests[0].run_key}).success
    sixth = tick(instance, root, fourth.cursor)
    assert sixth.run_requests == []
    assert [(r.partitions_def_name, r.partition_keys) for r in sixth.dynamic_partitions_requests] == [
        (TENANTS_PARTITION, ["other~_global"])
    ]
    assert sorted(json.loads(sixth.cursor)) == ["bot~_global", "bot~alice", "bot~bob"]


def test_missing_root_skips_without_error(instance, tmp_path):
    result = tick(instance, tmp_path / "nope")
    assert result.run_requests == [] and "no change in 0 files" in result.skip_reason.skip_message


def test_ten_thousand_files_scan_fast(instance, root):
    for user in range(20):
        folder = root / "bot" / "users" / f"u{user}" / "memory"
        folder.mkdir(parents=True)
        for i in range(500):
            (folder / f"note-{i}.md").write_text(f"# Note {i}\n")
    result = tick(instance, root)
    assert len(result.run_requests) == 20
    # The tick time over 10,000 files is measured by bench/ingest.py, not asserted here.
    assert tick(instance, root, result.cursor).run_requests == []
