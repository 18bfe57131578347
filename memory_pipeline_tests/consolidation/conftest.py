"""Helpers of the consolidation tests: transcripts written line by line, and runs of the
consolidation and dreaming assets on an ephemeral instance with the hashing embedder."""

from __future__ import annotations

import json
from datetime import datetime

import dagster as dg

from memory_pipeline.consolidation.assets import consolidation_assets
from memory_pipeline.consolidation.notes_assets import dreaming
from memory_pipeline.consolidation.partitions import consolidation_key
from memory_pipeline.orchestration.partitions import SESSION_TENANTS_PARTITION
from memory_pipeline.consolidation.store import ConsolidationStore
from memory_pipeline.embedding import EMBEDDER_IDENTITY

ALICE = "support-bot~alice"
ALICE_DAYS = ("2026-10-26", "2026-10-30", "2026-11-04", "2026-11-11", "2026-11-18")


def iso(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%dT%H:%M:%SZ")


def jsonl(*records: dict, completed: str | None = None) -> str:
    lines = [json.dumps(r) for r in records]
    if completed:
        lines.append(json.dumps({"type": "session.completed", "ts": completed}))
    return "\n".join(lines) + "\n"


def say(role: str, content: str, ts: str, turn_id: str | None = None) -> dict:
    record = {"role": role, "content": content, "ts": ts}
    if turn_id:
        record["turn_id"] = turn_id
    return record


def consolidate(instance, resources, day: str, tenant: str = ALICE, assets=None) -> dg.ExecuteInProcessResult:
    known = instance.get_dynamic_partitions(SESSION_TENANTS_PARTITION)
    if tenant not in known:
        instance.add_dynamic_partitions(SESSION_TENANTS_PARTITION, [tenant])
    return dg.materialize(
        assets or consolidation_assets, instance=instance, resources=resources, partition_key=consolidation_key(day, tenant)
    )


def run_dreaming(instance, resources, tenant: str = ALICE) -> dg.ExecuteInProcessResult:
    if tenant not in instance.get_dynamic_partitions(SESSION_TENANTS_PARTITION):
        instance.add_dynamic_partitions(SESSION_TENANTS_PARTITION, [tenant])
    return dg.materialize([dreaming], instance=instance, resources=resources, partition_key=tenant)


def store_for(lance_uri: str, kind: str = "hash") -> ConsolidationStore:
    return ConsolidationStore(lance_uri, EMBEDDER_IDENTITY[kind][1])


def metadata(result: dg.ExecuteInProcessResult, asset: str) -> dict:
    for event in result.get_asset_materialization_events():
        mat = event.step_materialization_data.materialization
        if mat.asset_key.to_user_string() == asset:
            return {k: v.value for k, v in mat.metadata.items()}
    raise AssertionError(f"{asset} was not materialized")
