"""Bad input at scale (hypothesis): whatever a workspace file or a query holds, nothing raises,
every cited line range lies inside its file, and every line is accounted for.

What "accounted for" means, precisely:
- a transcript line that is not blank is exactly one of: a turn, a compaction summary, a
  ``session.completed`` line, or an entry of ``Transcript.skipped`` with its line number and a
  reason (no line is both, none is lost);
- a workspace file is either read, or listed in the run's ``skipped`` with a reason (not UTF-8,
  too large, ...) and recorded in the manifest as skipped. A read Markdown file's chunks cover
  every line that has a non-blank character, each chunk's text comes from the lines it cites,
  and no range leaves the file. A read transcript's chunks cover every turn's line; its
  malformed lines are reported as skipped lines.
- a recall query, any text at all, is read (words, people, period) without raising, a period
  never ends before it starts, and a search with it over a real index returns or returns
  nothing, never raises (full-text query syntax included).
"""

from __future__ import annotations

import json
import tempfile
from datetime import date
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_pipeline.config import Settings
from memory_pipeline.embedding import HashEmbedder
from memory_pipeline.l0.pipeline import prepare_tenant
from memory_pipeline.l0.store import ChunkIndex
from memory_pipeline.recall.query import understand
from memory_pipeline.recall.search import search
from memory_pipeline.sources.transcripts import SESSION_COMPLETED, parse_transcript
from memory_pipeline.tenancy import Tenant
from memory_pipeline.text.chunking import split_lines
from memory_pipeline_tests.helpers.recall import indexed_workspace

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
NEWLINES = st.sampled_from(["\n", "\r\n", "\r"])

# --- transcripts -------------------------------------------------------------------------------

_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=80)
_ts = st.one_of(st.none(), st.just("2026-11-04T09:00:00Z"), st.integers(-10**15, 10**15), _text,
                st.floats(allow_nan=True, allow_infinity=True))
_message = st.fixed_dictionaries(
    {"role": st.one_of(st.sampled_from(["user", "assistant", "Caroline"]), _text, st.none(), st.integers()),
     "content": st.one_of(_text, st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": _text})),
                          st.none(), st.integers(), st.dictionaries(_text, _text, max_size=2))},
    optional={"ts": _ts, "turn_id": st.one_of(_text, st.integers(), st.none()), "type": st.just("message")},
)
_compaction = st.fixed_dictionaries({"type": st.just("compaction"), "summary": st.one_of(_text, st.none()), "ts": _ts})
_completed = st.fixed_dictionaries({"type": st.just(SESSION_COMPLETED)}, optional={"ts": _ts})
_json_line = st.one_of(_message, _compaction, _completed, st.dictionaries(_text, _text, max_size=3)).map(json.dumps)
_raw_line = st.one_of(
    _json_line,
    _json_line.map(lambda s: s[: len(s) // 2]),  # cut in the middle, as a crash or a live writer leaves it
    st.just("[1, 2, 3]"), st.just("null"), st.just('"just a string"'), st.just("{" * 5000),
    _text.filter(lambda s: "\n" not in s and "\r" not in s),
    st.just("   "), st.just(""),
)


def _is_completed(raw: str) -> bool:
    try:
        record = json.loads(raw)
    except (ValueError, RecursionError):
        return False
    return isinstance(record, dict) and record.get("type") == SESSION_COMPLETED


@settings(max_examples=400, **SETTINGS)
@given(lines=st.lists(_raw_line, max_size=25), newline=NEWLINES, trailing=st.booleans())
def test_every_transcript_line_is_a_turn_a_summary_a_completion_or_skipped(lines, newline, trailing):
    text = newline.join(lines) + (newline if trailing else "")
    parsed = parse_transcript(text)
    numbered = split_lines(text)
    content = {i + 1 for i, raw in enumerate(numbered) if raw.strip()}
    turns = [t.line for t in parsed.turns]
    summaries = [line for line, _, _ in parsed.compactions]
    skipped = [line for line, reason in parsed.skipped]
    assert all(reason for _, reason in parsed.skipped)
    kinds = turns + summaries + skipped
    assert len(kinds) == len(set(kinds))  # no line counted twice
    completions = {n for n in content if _is_completed(numbered[n - 1])}
    assert set(kinds) | completions == content
    assert not set(kinds) & completions


# --- workspace files through the L0 preparation ------------------------------------------------

_md_line = st.one_of(
    st.sampled_from(["# Heading", "## Sub", "Setext", "===", "---", "- item", "1. first", "> quote", "```", "~~~",
                     "| a | b |", "|---|---|", "", "   ", "\t", "key: value", "***", "<!-- comment -->"]),
    _text.filter(lambda s: "\n" not in s and "\r" not in s),
    st.text(alphabet="ab ", min_size=200, max_size=2500),  # long lines that must be split
)
_file_body = st.one_of(
    st.lists(_md_line, max_size=40).map("\n".join),
    st.binary(max_size=300),  # anything, including invalid UTF-8 and NUL bytes
    st.lists(_md_line, max_size=10).map(lambda ls: "\ufeff" + "\r\n".join(ls)),
)
_session_body = st.lists(_raw_line, max_size=15).map(lambda ls: "\n".join(ls) + "\n")


@settings(max_examples=150, **SETTINGS)
@given(
    notes=st.lists(_file_body, min_size=1, max_size=4),
    session=_session_body,
    sizes=st.sampled_from([(1000, 1600, 200), (40, 60, 10), (1, 1, 0)]),
)
def test_every_file_is_indexed_within_its_lines_or_reported_skipped(notes, session, sizes):
    target, maximum, overlap = sizes
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "agents"
        files = {f"ops-bot/users/alice/memory/n{i}.md": body for i, body in enumerate(notes)}
        files["ops-bot/sessions/alice/s1.jsonl"] = session
        for rel, body in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(body if isinstance(body, bytes) else body.encode("utf-8", "surrogatepass"))
        config = Settings(root=str(root), embedder="hash", max_file_bytes=50_000, chunk_target_chars=target,
                          chunk_max_chars=maximum, chunk_overlap_chars=overlap)
        store = ChunkIndex(Path(tmp) / "lancedb", dim=64)
        prepared = prepare_tenant(store, root, Tenant("ops-bot", "alice"), config, "hash-bow")

        skipped = {path for path, reason in prepared.skipped if "line skipped" not in reason}
        manifest = {row["path"]: row for row in prepared.files.to_pylist()}
        assert set(manifest) == set(files)
        chunks = prepared.chunks
        for rel, body in files.items():
            row = manifest[rel]
            assert row["status"] in ("indexed", "skipped"), row
            if row["status"] == "skipped":
                assert rel in skipped and row["reason"]
                continue
            text = body.decode("utf-8-sig") if isinstance(body, bytes) else body
            lines = split_lines(text)
            if lines and lines[-1] == "" and len(lines) > 1:
                lines = lines[:-1]
            mine = chunks.filter(chunks["path"] == rel)
            assert row["chunk_count"] == mine.height
            covered: set[int] = set()
            for start, end, chunk_text in mine.select("start_line", "end_line", "text").iter_rows():
                assert 1 <= start <= end <= max(len(lines), 1), (rel, start, end, len(lines))
                covered.update(range(start, end + 1))
                if rel.endswith(".md") and "[REDACTED:" not in chunk_text:
                    assert chunk_text.strip() in "\n".join(lines[start - 1 : end]), rel
            if rel.endswith(".md"):
                assert {i + 1 for i, line in enumerate(lines) if line.strip()} <= covered, rel
            else:
                parsed = parse_transcript(text)
                assert {t.line for t in parsed.turns} <= covered
                bad = [p for p, reason in prepared.skipped if p == rel and "line skipped" in reason]
                assert len(bad) == len(parsed.skipped)


# --- queries -----------------------------------------------------------------------------------

_query = st.one_of(
    st.text(max_size=200),
    st.lists(st.sampled_from([
        "when", "did", "Alice", "Bob's", "in", "June", "2023", "on", "31", "February", "2024", "2023-02-30",
        "last", "week", "yesterday", "3", "days", "ago", "May", "the", "\"", "'", "*", "OR", "AND", "NOT", "(", ")",
        ":", "~", "^", "-", "+", "\\", "[", "]", "{", "}", "?", "*:*", "text:", "0000", "9999", "99 years ago",
    ]), max_size=12).map(" ".join),
)


@settings(max_examples=500, **SETTINGS)
@given(text=_query, today=st.dates(min_value=date(1900, 1, 1), max_value=date(2200, 12, 31)))
def test_any_query_is_read_without_raising(text, today):
    info = understand(text, today)
    assert all(w and w == w.lower() for w in info.words)
    if info.period is not None and info.period.start is not None:
        assert info.period.start <= info.period.end


@pytest.fixture(scope="module")
def small_index(tmp_path_factory):
    return indexed_workspace(tmp_path_factory.mktemp("queries"))


@settings(max_examples=120, **SETTINGS)
@given(text=_query)
def test_any_query_searches_without_raising(small_index, text):
    root, uri = small_index
    config = Settings(root=str(root), lancedb_uri=uri, embedder="hash")
    results = search(text, "support-bot", "alice", store=uri, embedder=HashEmbedder(), settings=config, min_score=0.0)
    assert all(r.tenant in ("support-bot~alice", "support-bot~_global") for r in results)


def test_a_long_repetitive_line_counts_its_rows_in_the_manifest(tmp_path):
    """Found by the property above: identical pieces of one long line collapse to one row, and
    the manifest counted the pieces, so the manifest check failed on such a file forever."""
    root = tmp_path / "agents"
    path = root / "ops-bot/users/alice/memory/rule.md"
    path.parent.mkdir(parents=True)
    path.write_text("-" * 20 + " " + "=" * 400 + "\n")
    config = Settings(root=str(root), embedder="hash", chunk_target_chars=40, chunk_max_chars=60, chunk_overlap_chars=10)
    prepared = prepare_tenant(ChunkIndex(tmp_path / "lancedb", dim=64), root, Tenant("ops-bot", "alice"), config, "hash-bow")
    (row,) = prepared.files.to_pylist()
    assert row["chunk_count"] == prepared.chunks.height and prepared.chunks["id"].is_unique().all()
