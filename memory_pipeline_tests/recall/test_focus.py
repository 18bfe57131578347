"""Proves: a long row shows the shortest run of whole sentences that holds the most query words,
no longer than the limit, with its speaker prefix kept and "…" where text was left out; short rows,
and rows holding no query word, are shown whole."""

from __future__ import annotations

from memory_pipeline.recall.index.bm25 import query_words
from memory_pipeline.recall.results import focus

TURN = (
    "assistant (2023-05-01 10:00): Sure thing. Here are some ideas for Denver. First, visit the Red Rocks "
    "amphitheatre for a concert. Second, the museum of nature is great. Third, try the craft breweries "
    "in RiNo. Enjoy your trip to Colorado and have fun!"
)


def stems(text: str) -> frozenset[str]:
    return frozenset(query_words(text))


def test_the_sentences_holding_most_query_words_are_kept():
    assert focus(TURN, stems("craft breweries in Denver"), 120) == (
        "assistant (2023-05-01 10:00): …Third, try the craft breweries in RiNo.…"
    )
    assert focus(TURN, stems("craft breweries and the museum"), 120) == (
        "assistant (2023-05-01 10:00): …Second, the museum of nature is great. Third, try the craft breweries in RiNo.…"
    )
    assert focus(TURN, stems("a concert at Red Rocks"), 100) == (
        "assistant (2023-05-01 10:00): …First, visit the Red Rocks amphitheatre for a concert.…"
    )


def test_the_first_sentences_are_not_marked_as_cut_and_the_last_are_not_either():
    assert focus(TURN, stems("sure thing"), 60) == "assistant (2023-05-01 10:00): Sure thing.…"
    assert focus(TURN, stems("trip to Colorado"), 60) == "assistant (2023-05-01 10:00): …Enjoy your trip to Colorado and have fun!"


def test_short_rows_and_rows_without_query_words_stay_whole():
    assert focus(TURN, stems("Denver"), len(TURN)) == TURN
    assert focus(TURN, stems("quantum chromodynamics"), 80) == TURN
    assert focus("Plain note without a prefix. It is long enough. Budget matters.", stems("budget"), 30) == "…Budget matters."
