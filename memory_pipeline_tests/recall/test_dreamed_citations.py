"""A passage of a dreamed document cites the transcript turns its lines were read from: a search
result from it carries those turns' ids, as a typed memory's result carries its turn's, so a
reader (or a scorer) sees which turns the long-term memory restates. A line citing a range of
lines (a recurring pattern, a whole episode) restates no one statement and adds no turn; a note
that is not a dreamed document cites none."""

from __future__ import annotations

import pytest

from memory_pipeline.recall.search import search
from memory_pipeline_tests.helpers.recall import DREAMED, build_workspace, ingest, recall_settings, write_dreamed


@pytest.fixture(scope="module")
def dreamed(tmp_path_factory):
    base = tmp_path_factory.mktemp("dreamed")
    root, lance_uri = base / "agents", str(base / "lancedb")
    build_workspace(root)
    write_dreamed(root)
    ingest(root, lance_uri)
    return recall_settings(root, lance_uri), lance_uri


def results(dreamed, query: str, sources: list[str]):
    settings, lance_uri = dreamed
    return search(query, "support-bot", "alice", sources=sources, store=lance_uri, settings=settings,
                  min_score=0, k=10)


def test_a_dreamed_passage_cites_the_turns_its_lines_cite(dreamed):
    found = [r for r in results(dreamed, "invoices finance mailbox", ["memory"]) if r.path.endswith(DREAMED)]
    assert found, "the dreamed passage is found"
    assert found[0].turn_ids == ["t2", "t4"], "one turn per line citing one line; the range line adds none"
    assert found[0].citation.startswith(f"{DREAMED}#L"), "the result still cites the dreamed lines"


def test_a_note_that_is_not_dreamed_cites_no_turn(dreamed):
    notes = [r for r in results(dreamed, "Alice contacted by email", ["memory"]) if not r.path.endswith(DREAMED)]
    assert notes and all(r.turn_ids == [] for r in notes)
