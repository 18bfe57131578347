"""Proves: a transcript turn longer than a chunk is indexed whole, so a fact at character 3,070
of a 4,266-character message is found by ``search``; every piece cites the turn's line and id,
and the piece that holds it is read with a turn beside its own, as a short turn would be.

Before, such a turn was indexed as its first 1,600 characters and the rest was dropped.
"""

from __future__ import annotations

import json

import polars as pl
from typer.testing import CliRunner

from memory_pipeline.cli import app as cli_group
from memory_pipeline.config import get_settings
from memory_pipeline.l0.store import ChunkIndex
from memory_pipeline_tests.helpers import write
from memory_pipeline_tests.helpers.recall import ingest

FACT = "The spare turbine blades are stored in the Tromso warehouse under bay seven."


def _long_message() -> str:
    filler = [f"Checklist item {i} was reviewed by the night shift and left as it was." for i in range(60)]
    text = " ".join(filler[:44]) + " " + FACT + " " + " ".join(filler[44:])
    assert text.index(FACT) > 3000 and len(text) > 4000
    return text


def test_a_fact_deep_inside_a_long_turn_is_found_by_search(tmp_path, monkeypatch):
    root, lance_uri = tmp_path / "agents", str(tmp_path / "lancedb")
    message = _long_message()
    lines = [
        {"role": "alice", "content": "Can you keep the maintenance notes?", "ts": "2026-11-04T09:00:00Z", "turn_id": "t1"},
        {"role": "assistant", "content": message, "ts": "2026-11-04T09:00:30Z", "turn_id": "t2"},
        {"role": "alice", "content": "Thanks.", "ts": "2026-11-04T09:01:00Z", "turn_id": "t3"},
    ]
    write(root, "ops-bot/sessions/alice/s1.jsonl", "".join(json.dumps(line) + "\n" for line in lines))
    ingest(root, lance_uri)

    rows = ChunkIndex(lance_uri).chunks().to_polars().filter(pl.col("turn_ids") == ["t2"]).collect()
    assert rows.height > 2
    assert set(zip(rows["start_line"], rows["end_line"])) == {(2, 2)}
    assert all(text.startswith("assistant (2026-11-04 09:00): ") for text in rows["text"])
    assert sum(FACT in text for text in rows["text"]) >= 1

    monkeypatch.setenv("MEMORY_PIPELINE_ROOT", str(root))
    monkeypatch.setenv("MEMORY_PIPELINE_LANCEDB_URI", lance_uri)
    monkeypatch.setenv("MEMORY_PIPELINE_EMBEDDER", "hash")
    get_settings.cache_clear()
    try:
        result = CliRunner().invoke(
            cli_group, ["search", "where are the spare turbine blades stored", "-a", "ops-bot", "-u", "alice", "--json"]
        )
    finally:
        get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    top = json.loads(result.stdout)[0]
    # The piece holding the fact, read with a turn beside its own (not with another piece of itself).
    assert top["citation"] in {"ops-bot/sessions/alice/s1.jsonl#L1-L2", "ops-bot/sessions/alice/s1.jsonl#L2-L3"}
    texts = dict(zip(rows["id"], rows["text"]))
    pieces = [i for i in top["ids"] if i in texts]
    assert len(pieces) == 1 and FACT in texts[pieces[0]], top
    assert "t2" in top["turn_ids"] and len(top["turn_ids"]) == 2, top
