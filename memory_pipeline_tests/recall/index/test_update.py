"""Proves: when a tenant's rows change (files added, lines rewritten, files deleted), a new
process updates the tenant's persisted indices from the changed rows only (no tokenizing of the
unchanged rows, no k-means, no IVF assignment of old rows) and then answers every query exactly
as indices built from scratch do, with the same rows, vectors and BM25 postings; twice in a row
(an update of an update), and again after the maintenance job folds the IVF tail in.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from memory_pipeline.recall import sources
from memory_pipeline.recall.index import update as index_update
from memory_pipeline.recall.index.ann import IvfIndex
from memory_pipeline.recall.index.bm25 import TextIndex
from memory_pipeline.recall.index.persist import persist_large_tenants
from memory_pipeline.recall.search import search
from memory_pipeline.recall.sources import ChunkSource, TenantCache
from memory_pipeline_tests.helpers import write
from memory_pipeline_tests.helpers.recall import build_workspace, ingest, recall_settings

ALICE = "support-bot~alice"
LONG = 5  # transcripts of 60 turns: a change of one is a fifth of the tenant's rows
WORDS = ("invoice", "router", "coffee", "refund", "deploy", "ticket", "garden", "passport", "printer", "budget")
QUERIES = (
    "annual plans refundable", "API rate limit throttled", "contacted by email", "VPN certificate",
    "router printer", "coffee garden budget", "deploy ticket", "passport refund invoice", "finance mailbox",
    "lunch meeting moved", "heron lake",
)


def _session(name: str, turns: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    lines = []
    for i in range(turns):
        words = " ".join(rng.choice(WORDS, size=int(rng.integers(3, 9))).tolist())
        lines.append(json.dumps({"role": "user" if i % 2 else "assistant", "content": f"{name} turn {i}: {words}",
                                 "ts": f"2026-11-05T10:{i % 60:02d}:00Z", "turn_id": f"{name}-{i}"}))
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def ingested(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("update")
    root = base / "agents"
    root.mkdir()
    build_workspace(root)
    for n in range(LONG):
        write(root, f"support-bot/sessions/alice/long{n}.jsonl", _session(f"long{n}", 60, n))
    ingest(root, str(base / "lancedb"))
    return base


@pytest.fixture
def workspace(ingested, tmp_path):
    shutil.copytree(ingested, tmp_path / "copy")
    return tmp_path / "copy" / "agents", str(tmp_path / "copy" / "lancedb")


def _answers(uri, settings, monkeypatch, persist: bool):
    """Every query's results and the tenant's rows, through a fresh cache: a new process."""
    cache = TenantCache(uri, persist_min_rows=1 if persist else None)
    monkeypatch.setitem(sources._CACHES, uri, cache)
    answers = [[r.to_dict() for r in search(q, "support-bot", "alice", store=uri, settings=settings, min_score=0)]
               for q in QUERIES]
    return answers, cache.rows(ChunkSource(), ALICE)


def _fail(*args, **kwargs):
    raise AssertionError("rebuilt although the tenant could be updated")


def _assert_same_indices(updated, rebuilt) -> None:
    assert list(updated.ids) == list(rebuilt.ids) and list(updated.text) == list(rebuilt.text)
    assert np.array_equal(np.asarray(updated.vectors), np.asarray(rebuilt.vectors))
    assert np.array_equal(updated.prev_row, rebuilt.prev_row) and np.array_equal(updated.next_row, rebuilt.next_row)
    mine, theirs = updated.text_index(), rebuilt.text_index()
    assert mine.vocab == theirs.vocab
    for name in ("scores", "members", "starts", "tf", "length"):
        assert np.array_equal(getattr(mine, name), getattr(theirs, name)), name
    for row_id in list(rebuilt.ids)[::7]:
        assert updated.position[row_id] == rebuilt.position[row_id]


def _change(root: Path, round_: int) -> None:
    # rows added to a file (new neighbours), a line rewritten, a file deleted, a file added
    s1 = root / "support-bot/sessions/alice/s1.jsonl"
    s1.write_text(s1.read_text() + json.dumps({
        "role": "alice", "content": f"The lunch meeting moved to Friday, round {round_}.",
        "ts": f"2026-11-04T09:0{2 + round_}:00Z", "turn_id": f"t-extra-{round_}"}) + "\n")
    write(root, "support-bot/users/alice/MEMORY.md",
          f"# Alice\n\nAlice prefers to be contacted by email, round {round_}.\n\nShe keeps a heron lake photo.\n")
    (root / f"support-bot/sessions/alice/long{round_}.jsonl").unlink()
    write(root, f"support-bot/sessions/alice/new{round_}.jsonl", _session(f"new{round_}", 12, 10 + round_))


def test_a_changed_tenant_is_updated_and_answers_as_a_rebuild(workspace, monkeypatch):
    root, uri = workspace
    settings = recall_settings(root, uri, ann_min_rows=1, ann_nprobe=1000)  # the IVF path, exact
    first, rows = _answers(uri, settings, monkeypatch, persist=True)  # builds and persists
    assert all(first) and len(rows) > 100

    calls = []
    real = index_update.updated_rows
    monkeypatch.setattr(index_update, "updated_rows", lambda *a, **k: calls.append(real(*a, **k)) or calls[-1])
    for round_ in (0, 1):
        _change(root, round_)
        ingest(root, uri)
        with monkeypatch.context() as patch:  # nothing of the unchanged rows is built again
            patch.setattr(TextIndex, "__init__", _fail)
            patch.setattr(IvfIndex, "__init__", _fail)
            updated, updated_rows = _answers(uri, settings, monkeypatch, persist=True)
        assert calls and calls[-1] is not None
        ivf = updated_rows.ann_index()
        assert len(ivf.tail_order) > 0 and ivf.dead > 0  # added rows in the tail, deleted ones marked
        rebuilt, rebuilt_rows = _answers(uri, settings, monkeypatch, persist=False)
        assert all(updated) and updated == rebuilt
        assert any("lunch meeting" in r["snippet"] for hits in updated for r in hits)
        assert not any(f"long{round_} turn" in r["snippet"] for hits in updated for r in hits)
        _assert_same_indices(updated_rows, rebuilt_rows)

    # Maintenance folds the tail into the lists and drops the deleted rows; answers stay the same.
    assert persist_large_tenants(uri, ann_min_rows=1, min_rows=1)[ALICE] == len(rebuilt_rows)
    compacted, compacted_rows = _answers(uri, settings, monkeypatch, persist=True)
    ivf = compacted_rows.ann_index()
    assert len(ivf.tail_order) == 0 and ivf.dead == 0
    assert compacted == rebuilt
    _assert_same_indices(compacted_rows, rebuilt_rows)


def test_a_tenant_changed_too_much_is_rebuilt(workspace, monkeypatch):
    root, uri = workspace
    settings = recall_settings(root, uri, ann_min_rows=1, ann_nprobe=1000)
    _answers(uri, settings, monkeypatch, persist=True)
    for n in range(LONG):
        (root / f"support-bot/sessions/alice/long{n}.jsonl").unlink()
    ingest(root, uri)
    calls = []
    real = index_update.updated_rows
    monkeypatch.setattr(index_update, "updated_rows", lambda *a, **k: calls.append(real(*a, **k)) or calls[-1])
    updated, _ = _answers(uri, settings, monkeypatch, persist=True)
    rebuilt, _ = _answers(uri, settings, monkeypatch, persist=False)
    assert calls == [None] and all(updated) and updated == rebuilt
