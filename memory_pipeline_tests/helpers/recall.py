"""A small workspace for recall tests: two agents, a team member, three users, ingested through
the real L0 Dagster job with the hashing embedder, so recall reads exactly what the pipeline writes."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import numpy as np

from memory_pipeline.config import Settings
from memory_pipeline.l0.assets import l0_assets, l0_index_job
from memory_pipeline.orchestration.runs import discover_tenants, run_partitioned_job
from memory_pipeline_tests.helpers import make_resources, write

SESSION = "support-bot/sessions/alice/s1.jsonl"  # alice's session in the sample workspace
DREAMED = "support-bot/users/alice/memory/_system/dreaming/20261120-consolidated.md"
SHARED_NOTE = "# Network\n\nThe office VPN certificate rotates every month on the first Monday.\n"


class RankedRows:
    """The few columns recall's orderings (``timeline.current_first``, ``answers.number_first``) read
    of a candidate's rows: source, text, speaker, a unit vector (one axis per row by default) and
    whether it has a time of its own."""

    def __init__(self, source: str, texts: list[str], vectors: list[list[float]] | None = None,
                 speakers: list[str] | None = None):
        self.source, self.texts = [source] * len(texts), texts
        self.vectors = np.eye(len(texts), dtype=np.float32) if vectors is None else np.asarray(vectors, dtype=np.float32)
        self.vectors /= np.linalg.norm(self.vectors, axis=1, keepdims=True)
        self.said_by = speakers or [""] * len(texts)
        # Each row has a time of its own (a turn's), which the orderings read only as "not undated".
        self.day, self.when = [None] * len(texts), [True] * len(texts)

    def content(self, i: int) -> str:
        return self.texts[i]

    def speakers(self, i: int) -> tuple[str, ...]:
        return (self.said_by[i],) if self.said_by[i] else ()


def turn_lines(*items: tuple[str, str, str, str]) -> str:
    return "".join(
        json.dumps({"role": role, "content": content, "ts": ts, "turn_id": tid}) + "\n"
        for role, content, ts, tid in items
    )


def build_workspace(root: Path) -> None:
    write(root, "support-bot/MEMORY.md", "# Policies\n\nAnnual plans are refundable within 30 days of purchase.\n")
    write(root, "support-bot/memory/network.md", SHARED_NOTE)
    write(root, "support-bot/memory/2026-10-01.md", "# Outage\n\nThe billing dashboard outage was fixed by restarting the queue worker.\n")
    write(root, "support-bot/memory/2026-11-20.md", "# Outage\n\nThe billing dashboard outage came back; the queue worker was scaled up.\n")
    write(root, "support-bot/users/alice/MEMORY.md", "# Alice\n\nAlice prefers to be contacted by email, never by phone.\n")
    write(root, "support-bot/users/alice/memory/network.md", SHARED_NOTE)
    write(root, "support-bot/users/bob/MEMORY.md", "# Bob\n\nBob's account codeword is pineapple and his plan is the team tier.\n")
    write(
        root,
        SESSION,
        turn_lines(
            ("alice", "Hi, my API calls are being throttled again.", "2026-11-04T09:00:00Z", "t1"),
            ("assistant", "I raised your API rate limit to 2,000 requests per minute.", "2026-11-04T09:00:30Z", "t2"),
            ("alice", "Great, thanks a lot!", "2026-11-04T09:01:00Z", "t3"),
            ("alice", "Also, my invoices should go to the finance mailbox.", "2026-11-04T09:01:30Z", "t4"),
        ),
    )
    write(root, "helper-bot/MEMORY.md", "# Helper\n\nThe helper bot answers questions about shipping labels.\n")
    write(root, "research-bot/users/alice/MEMORY.md", "# Alice research\n\nAlice studies coral reef bleaching in the pineapple archipelago.\n")


def write_dreamed(root: Path) -> None:
    """Alice's dreamed document: two lines each citing one turn of her session, one citing a range."""
    write(root, DREAMED, "\n".join([
        "<!-- memory_pipeline:dreaming (generated; lines are merged by later runs, edits elsewhere) -->",
        "## Project facts",
        "",
        f"- Alice, 2026-11-04: her API rate limit was raised to 2,000 a minute. [s1 · {SESSION}#L2]",
        f"- Alice, 2026-11-04: invoices go to the finance mailbox. [s1 · {SESSION}#L4]",
        f"- Bob: something from a session no episode holds any more. [s9 · {SESSION}#L1-L2]",
    ]) + "\n")


def recall_settings(root: Path, lance_uri: str, **recall) -> Settings:
    base = Settings(root=str(root), lancedb_uri=lance_uri, embedder="hash", teams={"helper-bot": "support-bot"})
    return base.model_copy(update={"recall": base.recall.model_copy(update=recall)}) if recall else base


def ingest(root: Path, lance_uri: str, embedder: str = "hash") -> None:
    defs = dg.Definitions(assets=l0_assets, jobs=[l0_index_job], resources=make_resources(root, lance_uri, embedder))
    run_partitioned_job(defs, "l0_index_job", dg.DagsterInstance.ephemeral(), discover_tenants(root))


def indexed_workspace(base: Path, embedder: str = "hash") -> tuple[Path, str]:
    """The sample workspace written under ``base`` and indexed: (its root, its LanceDB URI)."""
    root, lance_uri = base / "agents", str(base / "lancedb")
    root.mkdir()
    build_workspace(root)
    ingest(root, lance_uri, embedder=embedder)
    return root, lance_uri
