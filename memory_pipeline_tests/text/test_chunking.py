"""Chunking keeps exact line ranges, heading paths and whole code blocks, at any input size.

Recall cites ``path#Lstart-Lend`` and ``memory_get`` reads those lines back, so every chunk's
range must be exactly the source lines its text came from (also for ``\\r\\n`` files and for the
pieces of an oversized paragraph). Fenced code is never cut, only oversized paragraphs overlap,
transcript windows keep their turn ids, and chunking 20 MB of Markdown stays exact, in time
linear in the size of the text.
"""

from __future__ import annotations

import random
from datetime import datetime, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_pipeline.text.turns import Transcript, Turn
from memory_pipeline.text.chunking import (
    ChunkSpan,
    chunk_markdown,
    chunk_transcript,
    format_turn,
    split_lines,
)
from memory_pipeline_tests.helpers.scaling import growth


def assert_exact_ranges(text: str | list[str], chunks: list[ChunkSpan]) -> None:
    """Each chunk is its source lines, or (a split piece) a substring lying on those lines."""
    lines = split_lines(text) if isinstance(text, str) else text
    for chunk in chunks:
        assert 1 <= chunk.start_line <= chunk.end_line <= len(lines), chunk
        source = "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
        assert lines[chunk.start_line - 1].strip() and lines[chunk.end_line - 1].strip(), chunk
        if chunk.text == source:
            continue
        at = source.find(chunk.text)
        assert at >= 0, chunk
        assert at <= len(lines[chunk.start_line - 1]), "piece does not start on its first line"
        assert at + len(chunk.text) > len(source) - len(lines[chunk.end_line - 1]) - 1, chunk


def assert_covers_every_line(text: str, chunks: list[ChunkSpan]) -> None:
    covered = set()
    for chunk in chunks:
        covered.update(range(chunk.start_line, chunk.end_line + 1))
    for number, line in enumerate(split_lines(text), start=1):
        if line.strip():
            assert number in covered, f"line {number} {line!r} is in no chunk"


def is_whole_lines(text: str, chunk: ChunkSpan) -> bool:
    return chunk.text == "\n".join(split_lines(text)[chunk.start_line - 1 : chunk.end_line])


MEMORY = """\
---
title: Caroline
updated: 2026-11-03
---

# Caroline

Caroline is a counsellor who lives in Lisbon.

## Projects

### Apollo

Apollo is the adoption-support group she started in 2025.

- meets on Tuesdays
- needs a new venue
  (the library closes in December)

### Hiking

She hikes with her dog Mochi.

```bash
# not a heading: this is a shell comment
./plan-route --from sintra --to cascais
```

## Preferences

| drink | when |
|-------|------|
| tea   | always |

> "I never drink coffee after noon."
"""


def test_headings_paths_and_exact_ranges():
    chunks = chunk_markdown(MEMORY, target_chars=200, max_chars=400)
    assert [(c.start_line, c.end_line, c.heading_path) for c in chunks] == [
        (1, 4, ()),
        (6, 8, ("Caroline",)),
        (10, 18, ("Caroline", "Projects", "Apollo")),
        (20, 27, ("Caroline", "Projects", "Hiking")),
        (29, 35, ("Caroline", "Preferences")),
    ]
    assert chunks[2].text.startswith("## Projects\n\n### Apollo\n")
    assert_exact_ranges(MEMORY, chunks)
    assert_covers_every_line(MEMORY, chunks)


def test_heading_starts_a_chunk_and_stays_with_its_content():
    text = "# A\n\nintro\n\n## B\n\nbody of b\n\n## C\n\nbody of c\n"
    chunks = chunk_markdown(text, target_chars=1000)
    assert [(c.text, c.heading_path) for c in chunks] == [
        ("# A\n\nintro", ("A",)),
        ("## B\n\nbody of b", ("A", "B")),
        ("## C\n\nbody of c", ("A", "C")),
    ]


def test_chunks_without_headings_pack_blocks_up_to_target():
    paragraphs = [f"Paragraph {i} " + "word " * 30 for i in range(10)]  # ~170 chars each
    text = "\n\n".join(p.strip() for p in paragraphs)
    chunks = chunk_markdown(text, target_chars=400, max_chars=600)
    ranges = [(c.start_line, c.end_line) for c in chunks]
    assert ranges == [(1, 3), (5, 7), (9, 11), (13, 15), (17, 19)]
    assert all(len(c.text) <= 400 for c in chunks)
    assert_exact_ranges(text, chunks)
    # Packed chunks never overlap.
    assert all(a.end_line < b.start_line for a, b in zip(chunks, chunks[1:]))


def test_fenced_code_is_never_split():
    code = "\n".join(f"    step_{i} = run({i})" for i in range(200))
    text = f"# Script\n\nBefore.\n\n```python\n{code}\n\n# comment, not a heading\n```\n\nAfter.\n"
    chunks = chunk_markdown(text, target_chars=100, max_chars=200)
    fence = [c for c in chunks if "```python" in c.text]
    assert len(fence) == 1 and fence[0].text.rstrip().endswith("```")
    assert code in fence[0].text and len(fence[0].text) > 200
    assert all(c.heading_path == ("Script",) for c in chunks)
    assert chunks[-1].text == "After."
    assert_exact_ranges(text, chunks)


def test_tilde_fence_and_longer_closing_fence():
    text = "~~~~\n```\nnot closed by backticks\n```\n~~~~~\n\ntext after"
    chunks = chunk_markdown(text, target_chars=10, max_chars=20)
    assert chunks[0].start_line == 1 and chunks[0].end_line == 5
    assert chunks[1].text == "text after"


def test_heading_stays_with_an_oversized_fence():
    text = "## Setup\n```\n" + "x = 1\n" * 100 + "```\n"
    chunks = chunk_markdown(text, target_chars=50, max_chars=100)
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 103)]


def test_unclosed_fence_is_text_and_cannot_swallow_the_file():
    text = "```\n" + "\n\n".join(f"Note {i}. " + "words " * 20 for i in range(20))
    chunks = chunk_markdown(text, target_chars=300, max_chars=400)
    assert len(chunks) > 5 and all(len(c.text) <= 400 for c in chunks)
    assert_covers_every_line(text, chunks)


def test_long_paragraph_is_split_at_sentences_with_overlap():
    sentences = [f"Sentence {i} talks about the Apollo project." for i in range(120)]
    # One paragraph over many source lines, three sentences a line.
    body = "\n".join(" ".join(sentences[i : i + 3]) for i in range(0, 120, 3))
    text = "# Notes\n\n" + body + "\n\nA short closing paragraph.\n"
    chunks = chunk_markdown(text, target_chars=500, max_chars=600, overlap_chars=120)
    pieces = [c for c in chunks if not is_whole_lines(text, c)]
    assert len(pieces) >= 8
    assert all(len(c.text) <= 600 for c in chunks)
    assert pieces[0].text.startswith("# Notes\n\nSentence 0 ")  # the heading stays with it
    assert all(c.heading_path == ("Notes",) for c in chunks)
    for piece in pieces:
        assert piece.text.rstrip().endswith(".")  # cut at a sentence end
    for before, after in zip(pieces, pieces[1:]):
        overlap = after.text[: after.text.index(".") + 1]
        assert overlap in before.text  # the next piece repeats the end of the previous one
        shared = before.text[before.text.rindex(overlap) :]
        assert 0 < len(shared) <= 120 and after.text.startswith(shared)
        assert after.start_line <= before.end_line  # overlapping lines
    assert chunks[-1].text == "A short closing paragraph."
    assert_exact_ranges(text, chunks)
    assert_covers_every_line(text, chunks)


def test_paragraph_without_sentence_ends_splits_at_words():
    text = " ".join(f"word{i}" for i in range(1000))
    chunks = chunk_markdown(text, max_chars=200, overlap_chars=40)
    assert chunks
    assert all(len(c.text) <= 200 for c in chunks)
    words = [c.text.split() for c in chunks]
    assert all(w[0].startswith("word") and w[-1].startswith("word") for w in words)
    joined = {w for ws in words for w in ws}
    assert joined == set(text.split())  # no word lost or cut in half
    assert all(c.start_line == c.end_line == 1 for c in chunks)


def test_unbroken_token_is_cut_hard():
    text = "x" * 1000
    chunks = chunk_markdown(text, max_chars=300, overlap_chars=50)
    assert chunks
    assert all(0 < len(c.text) <= 300 for c in chunks)
    assert_covers_every_line(text, chunks)


def test_oversized_table_splits_between_rows_without_overlap():
    rows = "\n".join(f"| {i} | row number {i} of the table |" for i in range(100))
    text = "## Data\n\n| n | text |\n|---|------|\n" + rows
    chunks = chunk_markdown(text, target_chars=300, max_chars=500)
    assert len(chunks) > 5
    assert all(is_whole_lines(text, c) and len(c.text) <= 500 for c in chunks)
    assert all(a.end_line < b.start_line for a, b in zip(chunks, chunks[1:]))
    assert chunks[0].start_line == 1
    assert_covers_every_line(text, chunks)


def test_lists_quotes_and_setext_headings():
    text = (
        "Title\n=====\n\nintro\n\nSub\n---\n\n- one\n- two\n  more of two\n  - nested\n"
        "1. first\n\n> quoted\nlazy continuation\n\n* * *\n"
    )
    chunks = chunk_markdown(text, target_chars=20, max_chars=60)
    by_start = {c.start_line: c for c in chunks}
    assert by_start[1].heading_path == ("Title",) and by_start[1].text == "Title\n=====\n\nintro"
    assert by_start[6].heading_path == ("Title", "Sub")
    assert_exact_ranges(text, chunks)
    assert_covers_every_line(text, chunks)
    assert any(c.text == "> quoted\nlazy continuation" for c in chunks)


def test_front_matter_only_when_it_looks_like_yaml():
    ruled = "---\n# Heading\ntext\n\n---\nmore"
    assert chunk_markdown(ruled, target_chars=5)[1].heading_path == ("Heading",)
    yaml = "---\ntags: [a]\n---\n# H\nbody"
    assert [(c.start_line, c.end_line) for c in chunk_markdown(yaml, target_chars=5)] == [
        (1, 3),
        (4, 5),
    ]


def test_crlf_gives_the_same_chunks_as_lf():
    lf = chunk_markdown(MEMORY, target_chars=120, max_chars=400)
    crlf = chunk_markdown(MEMORY.replace("\n", "\r\n"), target_chars=120, max_chars=400)
    assert crlf == lf
    assert not any("\r" in c.text for c in crlf)


@pytest.mark.parametrize("text", ["", " ", "\n\n\n", "\r\n \t\r\n", "\ufeff"])
def test_empty_and_whitespace_input_gives_no_chunks(text):
    assert chunk_markdown(text) == []


def test_invalid_sizes_are_refused():
    with pytest.raises(ValueError, match="max_chars"):
        chunk_markdown("x", max_chars=0)
    with pytest.raises(ValueError, match="overlap_chars"):
        chunk_markdown("x", overlap_chars=-1)


def realistic_markdown(size: int, seed: int = 7) -> str:
    rng = random.Random(seed)
    words = (
        "agent memory Apollo launch project Caroline likes hiking with her dog on weekends "
        "and prefers tea over coffee Melanie painted a sunrise last week"
    ).split()

    def sentence() -> str:
        return " ".join(rng.choice(words) for _ in range(rng.randint(6, 18))).capitalize() + "."

    parts, total = [], 0
    while total < size:
        kind = rng.random()
        if kind < 0.1:
            part = "#" * rng.randint(1, 3) + " " + sentence()
        elif kind < 0.5:
            part = " ".join(sentence() for _ in range(rng.randint(1, 8)))
        elif kind < 0.7:
            part = "\n".join("- " + sentence() for _ in range(rng.randint(2, 6)))
        elif kind < 0.8:
            code = "\n".join(f"x = {i}" for i in range(rng.randint(2, 30)))
            part = f"```python\n{code}\n```"
        elif kind < 0.85:
            part = "| a | b |\n|---|---|\n" + "\n".join(f"| {i} | {sentence()} |" for i in range(5))
        elif kind < 0.9:
            part = "> " + sentence() + "\n> " + sentence()
        else:
            part = " ".join(sentence() for _ in range(rng.randint(40, 80)))  # oversized
        parts.append(part)
        total += len(part) + 2
    return "\n\n".join(parts)


def test_twenty_megabytes_chunk_exactly_in_time_linear_in_their_size():
    text = "\n\n".join([realistic_markdown(2_000_000)] * 10)
    chunks = chunk_markdown(text)
    assert len(chunks) > 10_000
    assert_exact_ranges(split_lines(text), chunks)
    # Linear gives ~4 for 4x the text (4.3-5.3 on a quiet machine; 8.1 seen once with both cores
    # busy, the 4-MB text out of cache); re-scanning what was already chunked gives ~16.
    assert growth(chunk_markdown, realistic_markdown, 1_000_000) < 10



# --- property tests ---------------------------------------------------------------------------

markdown_lines = st.lists(
    st.one_of(
        st.sampled_from(
            [
                "# Title", "## Sub", "### Deep #", "#nohash", "```", "```py", "~~~", "````",
                "- item", "* item", "1. first", "  - nested", "> quote", ">", "| a | b |",
                "|---|---|", "a | b", "---", "===", "***", "", " ", "\t", "    indented",
                "Plain text. Another sentence!", "word " * 40, "x" * 150, "+++", "title: x",
            ]
        ),
        st.text(st.characters(blacklist_categories=("Cs",)), max_size=60),
    ),
    max_size=40,
)


@settings(max_examples=400, deadline=None)
@given(markdown_lines, st.sampled_from(["\n", "\r\n", "\r"]), st.integers(20, 120))
def test_any_markdown_chunks_to_exact_covering_ranges(lines, newline, max_chars):
    text = newline.join(lines)
    chunks = chunk_markdown(
        text, target_chars=max_chars // 2, max_chars=max_chars, overlap_chars=max_chars // 5
    )
    assert_exact_ranges(text, chunks)
    assert_covers_every_line(text, chunks)
    for chunk in chunks:
        if len(chunk.text) > max_chars:  # only fenced code (with its headings) may exceed
            assert "```" in chunk.text or "~~~" in chunk.text or "````" in chunk.text, chunk


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400), st.integers(1, 60), st.integers(0, 30))
def test_any_text_never_raises(text, max_chars, overlap):
    chunks = chunk_markdown(
        text, target_chars=max_chars, max_chars=max_chars, overlap_chars=overlap
    )
    assert_exact_ranges(text, chunks)
    assert_covers_every_line(text, chunks)


# --- transcripts ------------------------------------------------------------------------------


def turn(line: int, content: str, turn_id: str | None = None, minute: int | None = 0) -> Turn:
    ts = None if minute is None else datetime(2026, 11, 3, 9, minute, tzinfo=timezone.utc)
    return Turn(line, "Alice" if line % 2 else "assistant", content, ts, turn_id)


def test_format_turn_uses_speaker_and_utc_minute():
    cest = datetime.fromisoformat("2026-11-03T11:14:59+02:00")
    formatted = format_turn(Turn(1, "Alice", " hi there \n", cest, "t1"))
    assert formatted == "Alice (2026-11-03 09:14): hi there"
    assert format_turn(Turn(1, "user", "no time", None, None)) == "user: no time"


def test_windows_advance_by_stride_and_cover_the_tail():
    turns = tuple(turn(i + 1, f"message {i}", f"t{i}") for i in range(6))
    chunks = chunk_transcript(Transcript(turns, (), None, ()), window_turns=3, stride=2)
    assert [c.turn_ids for c in chunks] == [
        ("t0", "t1", "t2"),
        ("t2", "t3", "t4"),
        ("t3", "t4", "t5"),
    ]
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 3), (3, 5), (4, 6)]
    assert chunks[0].text == "\n".join(format_turn(t) for t in turns[:3])
    assert all(c.heading_path == () for c in chunks)


def test_few_turns_make_one_window_and_none_make_none():
    turns = (turn(2, "hello", "a"), turn(5, "hi", None))
    chunks = chunk_transcript(Transcript(turns, (), None, ()), window_turns=3)
    text = "assistant (2026-11-03 09:00): hello\nAlice (2026-11-03 09:00): hi"
    assert chunks == [ChunkSpan(2, 5, text, (), ("a",))]
    assert chunk_transcript(Transcript((), (), None, ())) == []


def test_long_windows_are_cut_and_a_huge_turn_is_split_not_truncated():
    turns = (
        turn(1, "a" * 50, "t1"),
        turn(2, "b" * 50, "t2"),
        turn(3, "c" * 500, "t3"),
        turn(4, "d" * 50, "t4"),
    )
    transcript = Transcript(turns, (), None, ())
    chunks = chunk_transcript(transcript, window_turns=4, stride=4, max_chars=200, overlap_chars=0)
    speaker = "Alice (2026-11-03 09:00): "
    budget = 200 - len(speaker)
    assert [(c.start_line, c.end_line, c.turn_ids, c.text) for c in chunks] == [
        (1, 2, ("t1", "t2"), "Alice (2026-11-03 09:00): " + "a" * 50 + "\nassistant (2026-11-03 09:00): " + "b" * 50),
        (3, 3, ("t3",), speaker + "c" * budget),
        (3, 3, ("t3",), speaker + "c" * budget),
        (3, 3, ("t3",), speaker + "c" * (500 - 2 * budget)),
        (4, 4, ("t4",), "assistant (2026-11-03 09:00): " + "d" * 50),
    ]


def test_a_long_turn_is_split_into_overlapping_pieces_that_keep_every_word():
    words = [f"w{i}" for i in range(1500)]  # about 7,900 characters
    long_turn = turn(5, " ".join(words) + ".", "t5")
    chunks = chunk_transcript(
        Transcript((turn(4, "before", "t4"), long_turn), (), None, ()),
        window_turns=3, stride=2, max_chars=1600, overlap_chars=200,
    )
    pieces = [c for c in chunks if c.turn_ids == ("t5",)]
    assert len(pieces) == 6
    assert all(c.text.startswith("Alice (2026-11-03 09:00): w") for c in pieces)
    assert all((c.start_line, c.end_line) == (5, 5) and len(c.text) <= 1600 for c in pieces)
    seen = [c.text.split(": ", 1)[1].rstrip(".").split(" ") for c in pieces]
    assert sorted({w for piece in seen for w in piece}, key=lambda w: int(w[1:])) == words
    # consecutive pieces share words: a fact cut at a boundary is whole in one of them
    assert all(set(a) & set(b) for a, b in zip(seen, seen[1:]))


def test_compaction_summaries_are_their_own_chunks_in_line_order():
    turns = (turn(1, "plan", "a"), turn(2, "ok", "b"), turn(4, "booked", "c"))
    compactions = ((3, "They planned a trip to Porto.", None),)
    chunks = chunk_transcript(Transcript(turns, compactions, None, ()), window_turns=2, stride=2)
    assert [(c.start_line, c.end_line, c.turn_ids) for c in chunks] == [
        (1, 2, ("a", "b")),
        (2, 4, ("b", "c")),
        (3, 3, ()),
    ]
    assert chunks[2] == ChunkSpan(3, 3, "Summary: They planned a trip to Porto.")


def test_long_compaction_summary_is_split_not_lost():
    summary = " ".join(f"Fact number {i} was discussed." for i in range(100))
    chunks = chunk_transcript(Transcript((), ((7, summary, None),), None, ()), max_chars=300)
    assert len(chunks) > 5
    assert all(c.text.startswith("Summary: ") and len(c.text) <= 300 for c in chunks)
    assert all((c.start_line, c.end_line) == (7, 7) for c in chunks)
    assert "Fact number 99 was discussed." in chunks[-1].text


def test_turn_ids_skip_missing_ids():
    turns = (turn(1, "x", None), turn(2, "y", "b"), turn(3, "z", None))
    [chunk] = chunk_transcript(Transcript(turns, (), None, ()))
    assert chunk.turn_ids == ("b",)
