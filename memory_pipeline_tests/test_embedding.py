"""The real model's fast path for one query gives the vector ``embed`` gives."""

from __future__ import annotations

import numpy as np
import pytest

from memory_pipeline.embedding import MiniLMEmbedder


@pytest.fixture(scope="module")
def model() -> MiniLMEmbedder:
    return MiniLMEmbedder()


@pytest.mark.parametrize(
    "text",
    ["", "x", "When did Alice go to Paris?", "naïve café 東京 " * 5, "word " * 300, "a" * 2000],
)
def test_a_query_embeds_as_a_document(model, text):
    """Short, empty, non-Latin and over-long (truncated) texts alike."""
    fast = model.embed_query(text)
    assert fast.dtype == np.float32 and fast.shape == (model.dim,)
    assert np.allclose(fast, model.embed([text])[0], atol=1e-5)
    assert model._traced() is not None  # the traced path ran, not the fallback


def test_without_a_traced_model_the_query_goes_through_encode(model, monkeypatch):
    monkeypatch.setattr(model, "_traced_model", None, raising=False)
    assert np.allclose(model.embed_query("the refund policy"), model.embed(["the refund policy"])[0])
