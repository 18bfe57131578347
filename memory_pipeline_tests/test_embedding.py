"""Proves: the real model's fast paths for one query (ONNX Runtime, then TorchScript, then
``encode``) give the vector ``embed`` gives, from empty to truncated texts; ``embed`` of a batch
runs the export (padded batches, texts of every length) to the vectors of sentence-transformers'
``encode``, in input order, and goes through ``encode`` when there is no checked export; a failed or missing
export falls back instead of failing, and an export is made once and reused from its cache; a
passed check is recorded, and the export it vouches for, loaded without the model (its tokenizer
file alone), gives the model's vectors and token counts; a record made by other runtimes is not
trusted. Sessions run the export's runtime form (the graph optimized once, the weights in a file
beside it), and where that form cannot be written they run the export itself, to the same vectors."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from memory_pipeline import query_encoder
from memory_pipeline.embedding import MiniLMEmbedder, minilm_path

pytestmark = pytest.mark.slow  # the real model

TEXTS = ["", "x", "When did Alice go to Paris?", "naïve café 東京 " * 5, "word " * 300, "a" * 2000]


@pytest.fixture(scope="module")
def model() -> MiniLMEmbedder:
    embedder = MiniLMEmbedder()
    # Exported into the machine's cache unless an earlier test or run did (the suite exports once).
    assert embedder._onnx() is not None
    return embedder


@pytest.mark.parametrize("text", TEXTS)
def test_a_query_embeds_as_a_document(model, text):
    """Short, empty, non-Latin and over-long (truncated) texts alike, on every path."""
    want = model.embed([text])[0]
    onnx = model.embed_query(text)
    assert onnx.dtype == np.float32 and onnx.shape == (model.dim,)
    assert float(onnx @ want) >= 1 - query_encoder.MAX_COSINE_GAP
    assert np.allclose(onnx, model._onnx().embed(text))  # the ONNX path ran, not a fallback
    traced = _without_onnx(model, text)
    assert np.allclose(traced, want, atol=1e-5)
    assert model._traced() is not None


def test_a_batch_embeds_through_the_export_as_encode_does(model, monkeypatch):
    texts = TEXTS * 7 + [f"turn {i}: " + "the refund policy changed " * (i % 9) for i in range(40)]
    reference = model.model.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    batched = model.embed(texts)
    assert model._batch_encoder() is not None and batched.shape == reference.shape
    assert float(np.min(np.sum(batched * reference, axis=1))) >= 1 - query_encoder.MAX_COSINE_GAP
    assert np.allclose(batched[:len(TEXTS)], [model.embed_query(t) for t in TEXTS], atol=1e-5)
    monkeypatch.setattr(model, "_batch", None)  # no checked export: PyTorch
    assert np.allclose(model.embed(texts[:10]), reference[:10], atol=1e-5)


def _without_onnx(model, text):
    held = model._onnx_encoder
    model._onnx_encoder = None
    try:
        return model.embed_query(text)
    finally:
        model._onnx_encoder = held


def test_without_onnx_or_a_traced_model_the_query_goes_through_encode(model, monkeypatch):
    monkeypatch.setattr(model, "_onnx_encoder", None)
    monkeypatch.setattr(model, "_traced_model", None, raising=False)
    assert np.allclose(model.embed_query("the refund policy"), model.embed(["the refund policy"])[0])


def test_the_export_is_cached_and_a_broken_one_is_refused(model, tmp_path, monkeypatch):
    path = model._onnx().path
    assert path.is_file() and path == query_encoder.export_path(minilm_path())
    monkeypatch.setattr(query_encoder, "export_onnx", lambda *a: pytest.fail("exported again"))
    assert query_encoder.load_onnx_encoder(model.model, minilm_path()) is not None
    monkeypatch.setenv("MEMORY_PIPELINE_CACHE_DIR", str(tmp_path))
    broken = query_encoder.export_path(minilm_path())
    broken.parent.mkdir(parents=True)
    broken.write_bytes(b"not a model")
    assert query_encoder.load_onnx_encoder(model.model, minilm_path()) is None


def test_a_recorded_check_loads_the_export_without_the_model(model):
    path = model._onnx().path
    record = json.loads(query_encoder.check_path(path).read_text())
    assert record["export"] == path.name and record["worst_cosine"] >= 1 - query_encoder.MAX_COSINE_GAP
    alone = query_encoder.load_checked_encoder(minilm_path())
    assert alone is not None and alone.path == path
    wanted = model.embed(TEXTS)
    assert [float(alone.embed(text) @ want) >= 1 - query_encoder.MAX_COSINE_GAP for text, want in zip(TEXTS, wanted)] == [True] * len(TEXTS)
    assert [alone.count_tokens(t) for t in TEXTS] == [len(model.model.tokenizer.tokenize(t)) for t in TEXTS]
    fresh = MiniLMEmbedder()  # a query process: vectors and token counts, and no model loaded
    assert np.allclose(fresh.embed_query(TEXTS[2]), alone.embed(TEXTS[2]))
    assert fresh.count_tokens(TEXTS[3]) == alone.count_tokens(TEXTS[3]) and "model" not in vars(fresh)


def test_a_check_recorded_by_other_runtimes_is_checked_again(model, tmp_path, monkeypatch):
    exported = model._onnx().path
    monkeypatch.setenv("MEMORY_PIPELINE_CACHE_DIR", str(tmp_path))
    path = query_encoder.export_path(minilm_path())
    path.parent.mkdir(parents=True)
    shutil.copyfile(exported, path)
    assert query_encoder.load_checked_encoder(minilm_path()) is None  # never checked here
    record = query_encoder.check_path(path)
    record.write_text(json.dumps({**json.loads(query_encoder.check_path(exported).read_text()), "onnxruntime": "0.1"}))
    assert query_encoder.load_checked_encoder(minilm_path()) is None
    monkeypatch.setattr(query_encoder, "export_onnx", lambda *a: pytest.fail("exported again"))
    assert query_encoder.load_onnx_encoder(model.model, minilm_path()) is not None  # checked and recorded anew
    assert json.loads(record.read_text())["onnxruntime"] != "0.1"
    assert query_encoder.load_checked_encoder(minilm_path()).path == path


def test_sessions_run_the_runtime_form_and_without_it_the_export(model, monkeypatch):
    path = model._onnx().path
    runtime = query_encoder.runtime_form(path)
    assert runtime.is_file() and runtime != path and query_encoder.runtime_form(path) == runtime
    # The graph alone; the 90 MB of weights are in the data file a session memory-maps.
    assert runtime.stat().st_size < 1_000_000 < 80_000_000 < runtime.with_name(runtime.name + ".data").stat().st_size

    def read_only(_):
        raise PermissionError("read-only cache")

    monkeypatch.setattr(query_encoder, "runtime_form", read_only)
    plain = query_encoder.OnnxQueryEncoder(path, minilm_path())
    assert [np.allclose(plain.embed(t), model._onnx().embed(t), atol=1e-5) for t in TEXTS] == [True] * len(TEXTS)
    monkeypatch.setattr(query_encoder, "runtime_form", lambda _: runtime.with_name("missing.onnx"))  # a damaged form
    assert np.allclose(query_encoder.OnnxQueryEncoder(path, minilm_path()).embed(TEXTS[2]), plain.embed(TEXTS[2]))
