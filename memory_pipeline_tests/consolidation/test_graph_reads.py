"""Proves: ``build_graph`` right after ``consolidate_episodes`` of the same run (one ``SessionsRead``)
reads each transcript's turns from the sessions the episodes were made from, without reading the files again, and a transcript
rewritten in between is read again, so the graph says what the file says now. And the graph and
dreaming read the turns' parses the summaries kept: neither parses a turn again. Plain functions,
real spaCy, the hashing embedder."""

from datetime import UTC, datetime, timedelta

from memory_pipeline.consolidation import pipeline
from memory_pipeline.consolidation.store import ConsolidationStore
from memory_pipeline.embedding import HashEmbedder
from memory_pipeline.episodes.sessions import SessionsRead
from memory_pipeline.tenancy import Tenant
from memory_pipeline.text import statements
from memory_pipeline.text.statements import forget_parses, load_nlp
from memory_pipeline_tests.helpers import write
from memory_pipeline_tests.helpers.consolidation import RefusingPipeline, jsonl, say

TENANT = Tenant("bot", "ann")
NOW = datetime(2026, 12, 1, tzinfo=UTC)


def write_sessions(root, city: str) -> None:
    write(root, "bot/sessions/ann/s1.jsonl", jsonl(
        say("user", "I work at Tidewater Logistics.", "2026-10-01T09:00:00Z", "t1"), completed="2026-10-01T09:05:00Z",
    ))
    write_second(root, city)


def write_second(root, city: str) -> None:
    write(root, "bot/sessions/ann/s2.jsonl", jsonl(
        say("user", f"I moved to {city} last weekend.", "2026-11-11T15:00:00Z", "t1"), completed="2026-11-11T15:05:00Z",
    ))


def graph_after_episodes(root, tmp_path, monkeypatch, between=None) -> tuple[list[tuple[str, str]], list[str]]:
    """(predicate, object) of the graph's relations, and the transcripts build_graph read again."""
    store, read = ConsolidationStore(str(tmp_path / "lance"), HashEmbedder().dim), SessionsRead()
    pipeline.consolidate_episodes(
        root, store, TENANT, None, HashEmbedder(), NOW, timedelta(minutes=30), timedelta(days=90), read=read
    )
    if between:
        between()
    reread: list[str] = []
    load = pipeline.load_session

    def counting(root_, file, now, idle):
        reread.append(file.path)
        return load(root_, file, now, idle)

    monkeypatch.setattr(pipeline, "load_session", counting)
    graph = pipeline.build_graph(root, store, TENANT, None, HashEmbedder(), read=read)
    assert not graph.failures
    return sorted((r["predicate"], r["object"]) for r in graph.relations), reread


def test_the_graph_reads_the_sessions_its_episodes_read(root, tmp_path, monkeypatch):
    write_sessions(root, "Porto")
    relations, reread = graph_after_episodes(root, tmp_path, monkeypatch)
    assert relations == [("lives_in", "Porto"), ("works_at", "Tidewater Logistics")]
    assert reread == []


def test_a_transcript_rewritten_since_is_read_again(root, tmp_path, monkeypatch):
    write_sessions(root, "Porto")
    relations, reread = graph_after_episodes(root, tmp_path, monkeypatch, between=lambda: write_second(root, "Bergen"))
    assert relations == [("lives_in", "Bergen"), ("works_at", "Tidewater Logistics")]
    assert reread == ["bot/sessions/ann/s2.jsonl"]


def test_the_graph_and_dreaming_parse_no_turn_the_summaries_parsed(root, tmp_path, monkeypatch):
    write_sessions(root, "Porto")
    store = ConsolidationStore(str(tmp_path / "lance"), HashEmbedder().dim)
    episodes = pipeline.consolidate_episodes(root, store, TENANT, None, HashEmbedder(), NOW, timedelta(minutes=30), timedelta(days=90))
    assert (episodes.parsed, episodes.parses_read) == (2, 0)  # one turn each; what they report to the UI
    # As in a new process: no parse in memory, and none made.
    refusing = RefusingPipeline(load_nlp())
    forget_parses()
    monkeypatch.setattr(pipeline, "load_nlp", lambda: refusing)
    monkeypatch.setattr(statements, "load_nlp", lambda: refusing)
    graph = pipeline.build_graph(root, store, TENANT, None, HashEmbedder())
    assert not graph.failures and (graph.parsed, graph.parses_read) == (0, 2)
    assert sorted((r["predicate"], r["object"]) for r in graph.relations) == [("lives_in", "Porto"), ("works_at", "Tidewater Logistics")]
    dreamed = pipeline.dream(root, store, TENANT, NOW)
    assert not dreamed.problems and "Tidewater Logistics" in dreamed.result.path.read_text()
