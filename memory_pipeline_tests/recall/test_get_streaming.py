"""Proves: ``get`` reads a file as a stream and honours the index's size limit.

A file over ``max_file_bytes`` is not indexed, so nothing cites it: ``get`` refuses it with the
limit in the message instead of reading it whole. Under the limit, only the lines asked for (and a
bounded context either side, for scrubbing) are held, whatever the file's size, measured by the
peak of Python allocations; a private key whose lines are asked for without its BEGIN line is
still redacted, because the context holds it; and line numbers count ``\\r\\n``, ``\\r`` and ``\\n``
as the index does.
"""

from __future__ import annotations

import tracemalloc

import pytest

from memory_pipeline.recall.get import GetError, get
from memory_pipeline_tests.helpers import write
from memory_pipeline_tests.helpers.recall import build_workspace, recall_settings
from memory_pipeline_tests.secret_corpus import corpus

ALICE = "support-bot/users/alice/memory"


@pytest.fixture
def workspace(tmp_path):
    root = tmp_path / "agents"
    build_workspace(root)
    return root, recall_settings(root, str(tmp_path / "lancedb"))


def test_a_file_over_the_limit_is_refused_without_reading_it(workspace):
    root, settings = workspace
    settings = settings.model_copy(update={"max_file_bytes": 1_000_000})
    write(root, f"{ALICE}/huge.md", "a line of notes\n" * 200_000)  # 3.2 MB
    with pytest.raises(GetError, match=r"huge.md' is 3.2 MB, over the 1.0 MB limit"):
        get(f"{ALICE}/huge.md", 1, 2, agent="support-bot", user="alice", settings=settings)


def test_two_lines_of_a_large_file_hold_only_those_lines(workspace):
    root, settings = workspace
    write(root, f"{ALICE}/big.md", "".join(f"line {n} of a long day of notes\n" for n in range(1, 200_001)))
    tracemalloc.start()
    got = get(f"{ALICE}/big.md", 150_000, 2, agent="support-bot", user="alice", settings=settings)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert got.lines == ["line 150000 of a long day of notes", "line 150001 of a long day of notes"]
    assert got.total_lines == 200_000
    assert peak < 1_000_000, f"peak {peak} bytes for a {6_500_000 / 1e6:.1f} MB file"


def test_lines_inside_a_private_key_are_redacted_from_their_context(workspace):
    root, settings = workspace
    pem = next(p for p in corpus(5) if p.name == "pem_rsa")
    write(root, f"{ALICE}/keys.md", "# Keys\n\n" + pem.line + "\n\nafter\n")
    body = pem.secrets[0].split("\n")
    got = get(f"{ALICE}/keys.md", 5, 2, agent="support-bot", user="alice", settings=settings)
    assert len(got.lines) == 2 and not any(part in line for part in body for line in got.lines)
    assert get(f"{ALICE}/keys.md", 10, agent="support-bot", user="alice", settings=settings).lines == ["", "after"]


def test_line_endings_count_as_the_index_counts_them(workspace):
    root, settings = workspace
    (root / ALICE / "mixed.md").write_bytes(b"\xef\xbb\xbfone\r\ntwo\rthree\nfour")
    got = get(f"{ALICE}/mixed.md", 2, 3, agent="support-bot", user="alice", settings=settings)
    assert (got.lines, got.total_lines) == (["two", "three", "four"], 4)
