"""What commands print for people: a long text is cut after a whole word and says it was cut."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from memory_pipeline.cli.output import clip, quoted


def test_a_long_text_is_cut_after_its_last_whole_word():
    text = "Alice has decided to narrow the thesis from five cities to three: Edinburgh, Lyon and Ghent."
    assert clip(text, 60) == "Alice has decided to narrow the thesis from five cities to…"
    assert clip(text, 76) == "Alice has decided to narrow the thesis from five cities to three: Edinburgh…"
    assert clip(text, len(text)) == text
    assert quoted("x" * 100) == repr("x" * 79 + "…")  # one long word is cut where it reaches the limit


@given(st.text(alphabet=st.sampled_from("ab \n.é"), max_size=200), st.integers(min_value=10, max_value=150))
def test_a_clipped_text_fits_and_is_the_texts_start(text, limit):
    shown = clip(text, limit)
    assert len(shown) <= limit
    if len(text) <= limit:
        assert shown == text
        return
    kept = shown.removesuffix("…")
    assert shown.endswith("…") and text.startswith(kept)
    # Cut between words, or inside the last word only when the whole words would leave too little.
    between_words = not (kept[-1:].isalnum() and text[len(kept)].isalnum())
    whole_words = re.sub(r"\S+$", "", kept).rstrip()
    assert between_words or len(kept) == limit - 1 and len(whole_words) < limit * 4 // 5
