"""Helpers of the consolidation tests: transcripts written line by line, runs of the
consolidation and dreaming assets on an ephemeral instance with the hashing embedder, and a
spaCy pipeline that refuses to parse."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta

import dagster as dg

from memory_pipeline.consolidation.assets import consolidation_assets, episodic_summaries, scope_config
from memory_pipeline.consolidation.notes_assets import dreaming
from memory_pipeline.consolidation.store import ConsolidationStore
from memory_pipeline.embedding import EMBEDDER_IDENTITY
from memory_pipeline.episodes.summaries import episode_id
from memory_pipeline.orchestration.partitions import SESSION_TENANTS_PARTITION

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


def consolidate(
    instance, resources, day: str | None, tenant: str = ALICE, assets=None, again: bool = True
) -> dg.ExecuteInProcessResult:
    """A consolidation run of ``tenant`` over the sessions completed on ``day`` (every day if None),
    consolidated again if they were already (``again``), as a rerun of that day would."""
    known = instance.get_dynamic_partitions(SESSION_TENANTS_PARTITION)
    if tenant not in known:
        instance.add_dynamic_partitions(SESSION_TENANTS_PARTITION, [tenant])
    assets = assets or consolidation_assets
    config = scope_config([day] if day else (), again=again) if episodic_summaries in assets else None
    return dg.materialize(assets, instance=instance, resources=resources, partition_key=tenant, run_config=config)


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


def dreamed_path(root, agent="support-bot", user="alice"):
    day = datetime.now(UTC).strftime("%Y%m%d")
    return root / agent / "users" / user / "memory" / "_system" / "dreaming" / f"{day}-consolidated.md"


def human_files(root) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*.md")
        if "_system" not in p.parts
    }


NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def add_episodes(store, tenant: str, n: int, start: int = 0) -> list[str]:
    rows = []
    for i in range(start, start + n):
        source_id = f"{tenant}/s{i}#c0"
        when = NOW - timedelta(days=30 - i)
        rows.append({
            "id": episode_id(tenant, source_id), "tenant": tenant, "agent_id": tenant.split("~")[0],
            "user_id": tenant.split("~")[1], "path": f"x/sessions/y/s{i}.jsonl", "start_line": 1, "end_line": 2,
            "turn_ids": [], "summary": f"summary {i}", "l0_abstract": f"abstract {i}", "key_topics": [],
            "source_id": source_id, "session_id": f"s{i}", "day": when.date().isoformat(), "created_at": when,
            "completed_at": when, "completed_by": "marker", "expires_at": when + timedelta(days=90),
            "promoted_at": None, "produced_by": "extractive", "llm_model": None, "model": "hash-bow",
            "vector": [1.0] + [0.0] * 63,
        })
    store.upsert_episodes(rows)
    return [r["id"] for r in rows]


class RefusingPipeline:
    """A spaCy pipeline's identity and vocabulary, refusing to parse anything: a step that reads
    every parse back from the stored ones (``timeline.parse_cache``) never calls it."""

    def __init__(self, nlp):
        self.meta, self.pipe_names, self.vocab = nlp.meta, nlp.pipe_names, nlp.vocab

    def pipe(self, texts, **_options):
        texts = list(texts)
        assert texts == [], f"parsed again: {texts[:2]}"
        return iter(())
