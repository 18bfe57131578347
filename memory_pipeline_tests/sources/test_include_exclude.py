"""Proves: the include and exclude patterns reach every reader of the workspace. With a note and a
transcript excluded by ``MEMORY_PIPELINE_EXCLUDE``, ``ingest`` indexes neither, ``consolidate``
makes no episode of the transcript and ``memories ingest`` extracts nothing from either, while
the files beside them, which the same patterns keep, are read by all three.
"""

from __future__ import annotations

import json

import dagster as dg
import pytest

from memory_pipeline.config import DEFAULT_EXCLUDE, DEFAULT_INCLUDE, get_settings
from memory_pipeline.consolidation.assets import consolidation_assets, consolidation_job
from memory_pipeline.embedding import EMBEDDER_IDENTITY
from memory_pipeline.l0.assets import l0_assets, l0_index_job
from memory_pipeline.l0.store import ChunkIndex
from memory_pipeline.memories.assets import typed_memories_job, typed_memory_assets
from memory_pipeline.memories.store import TypedMemoryStore
from memory_pipeline.sources.workspace import KIND_MEMORY, KIND_SESSIONS, classify
from memory_pipeline_tests.cli_env import cli_app, run
from memory_pipeline_tests.helpers import make_resources, write
from memory_pipeline_tests.helpers.consolidation import jsonl, say, store_for

pytestmark = pytest.mark.slow

ANN = "bot~ann"
WHO = ("--agent", "bot", "--user", "ann")
EXCLUDE = [*DEFAULT_EXCLUDE, "memory/private/**", "sessions/*/draft-*"]
KEPT_NOTE, HIDDEN_NOTE = "bot/users/ann/memory/2026-10-27.md", "bot/users/ann/memory/private/2026-10-27.md"
KEPT_TALK, HIDDEN_TALK = "bot/sessions/ann/s1.jsonl", "bot/sessions/ann/draft-s2.jsonl"


def talk(day: int, words: str) -> str:
    return jsonl(
        say("user", f"I prefer {words} for every invoice, please remember that.", f"2026-10-{day}T09:00:00Z", "t1"),
        say("assistant", "Noted, I will send them that way from now on.", f"2026-10-{day}T09:01:00Z", "t2"),
        say("user", f"I moved to {words} Street last week and work at the harbour office.", f"2026-10-{day}T09:02:00Z", "t3"),
        completed=f"2026-10-{day}T09:05:00Z",
    )


@pytest.fixture
def app(tmp_path, lance_uri, monkeypatch):
    root = tmp_path / "agents"
    write(root, "bot/users/ann/MEMORY.md", "# Ann\n\n## Preferences\n- Prefers short answers\n")
    write(root, KEPT_NOTE, "# 27 October\n\n## Decisions\n- Decided to renew the Tidewater contract\n")
    write(root, HIDDEN_NOTE, "# 27 October\n\n## Decisions\n- Decided to renew the Quokkazebra contract\n")
    write(root, KEPT_TALK, talk(26, "Tidewater"))
    write(root, HIDDEN_TALK, talk(28, "Quokkazebra"))
    monkeypatch.setenv("MEMORY_PIPELINE_EXCLUDE", json.dumps(EXCLUDE))
    defs = dg.Definitions(
        assets=[*l0_assets, *consolidation_assets, *typed_memory_assets],
        jobs=[l0_index_job, consolidation_job, typed_memories_job], resources=make_resources(root, lance_uri),
    )
    yield cli_app(monkeypatch, root, lance_uri, tmp_path / "dagster_home", defs)
    get_settings.cache_clear()


def test_excluded_files_are_neither_indexed_consolidated_nor_extracted(app, lance_uri):
    # Without the setting's patterns both files would be memory.
    assert classify("memory/private/2026-10-27.md", DEFAULT_INCLUDE, DEFAULT_EXCLUDE) == KIND_MEMORY
    assert classify("sessions/ann/draft-s2.jsonl", DEFAULT_INCLUDE, DEFAULT_EXCLUDE) == KIND_SESSIONS
    assert get_settings().exclude == tuple(EXCLUDE)

    run(app, "ingest", *WHO, "--json")
    chunks = ChunkIndex(lance_uri).chunk_rows(ANN, ["path", "text"])
    assert {KEPT_NOTE, KEPT_TALK} <= set(chunks["path"]) and not {HIDDEN_NOTE, HIDDEN_TALK} & set(chunks["path"])
    assert not any("Quokkazebra" in text for text in chunks["text"])

    run(app, "consolidate", *WHO, "--json")
    episodes = store_for(lance_uri).episode_rows(ANN)
    assert episodes["path"].to_list() == [KEPT_TALK]

    run(app, "memories", "ingest", *WHO, "--json")
    memories = TypedMemoryStore(lance_uri, EMBEDDER_IDENTITY["hash"][1]).memory_rows(ANN)
    sources = {ref.split("#")[0] for ref in memories["source_ref"]}
    assert {KEPT_NOTE, KEPT_TALK} <= sources and not {HIDDEN_NOTE, HIDDEN_TALK} & sources
    assert not any("Quokkazebra" in text for text in memories["content"])
