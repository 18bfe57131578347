"""Proves: a query answered in a new process (the Python API's ``search``, the CLI's ``search``
and ``inject``) imports neither PyTorch, sentence-transformers, spaCy nor Dagster, nor what a
one-shot query was measured to pay for without needing it (the secret scrubber: the access log
keeps the citations recall built from its rows as cited; pydantic-settings; rich, for ``--json``),
and finds what
the model's own ``encode`` finds for the same query (its vector comes from the checked ONNX
export and the model's tokenizer file); once the tenant's reads are kept at the tables' versions,
a new process does not import LanceDB either. A real-model index, so slow."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from memory_pipeline.embedding import MiniLMEmbedder, prepare_query_encoder
from memory_pipeline.recall.search import search
from memory_pipeline_tests.helpers import REPO
from memory_pipeline_tests.helpers.recall import indexed_workspace, recall_settings

pytestmark = pytest.mark.slow

MODELS = ("torch", "sentence_transformers", "spacy", "dagster")
ONE_SHOT_SPARES = ("detect_secrets", "memory_pipeline.text.scrub", "pydantic_settings", "rich", "tenacity")
QUERY = "What is the refund policy for annual plans?"
PROBE = f"""
import json, sys
mode, *args = sys.argv[1:]
if mode == "api":
    from memory_pipeline.recall import search
    print(json.dumps([r.to_dict() for r in search(args[0], agent="support-bot", user="alice")]))
else:
    from memory_pipeline.cli import main
    sys.argv = ["memory-pipeline", *args]
    try:
        main()
    except SystemExit as exit:
        assert exit.code == 0, exit.code
print(json.dumps(sorted(m for m in {(*MODELS, *ONE_SHOT_SPARES, "lancedb")!r} if m in sys.modules)))
"""


class EncodeEmbedder(MiniLMEmbedder):
    """The query through sentence-transformers' ``encode``, as documents are indexed."""

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    root, uri = indexed_workspace(tmp_path_factory.mktemp("query-imports"), embedder="minilm")
    assert prepare_query_encoder() is not None  # the export, checked once against the model
    return root, uri


def _run(indexed, *args: str) -> tuple[object, list[str]]:
    root, uri = indexed
    env = {**os.environ, "PYTHONPATH": str(REPO), "MEMORY_PIPELINE_ROOT": str(root),
           "MEMORY_PIPELINE_LANCEDB_URI": uri, "MEMORY_PIPELINE_EMBEDDER": "minilm"}
    done = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    *answer, loaded = done.stdout.strip().splitlines()
    return json.loads("\n".join(answer)), json.loads(loaded)


def _found(results: list[dict]) -> list[tuple[str, int, int]]:
    return [(r["path"], r["start_line"], r["end_line"]) for r in results]


def test_a_query_loads_no_model_and_finds_what_encode_finds(indexed):
    api, loaded = _run(indexed, "api", QUERY)  # the first process reads the tables through LanceDB
    assert set(loaded) <= {"lancedb"}
    cli, loaded_cli = _run(indexed, "cli", "search", QUERY, "-a", "support-bot", "-u", "alice", "--json")
    assert loaded_cli == []  # the tenant's reads were kept at the tables' versions: no LanceDB
    inject, loaded_inject = _run(indexed, "cli", "inject", "Can I get a refund on my annual plan?",
                                 "-a", "support-bot", "-u", "alice", "--json")
    assert loaded_inject == [] and inject["injected"] >= 1

    root, uri = indexed
    expected = [r.to_dict() for r in search(QUERY, "support-bot", "alice", store=uri,
                                            settings=recall_settings(root, uri).model_copy(update={"embedder": "minilm"}),
                                            embedder=EncodeEmbedder())]
    assert api and _found(api) == _found(cli) == _found(expected)
    assert np.allclose([r["score"] for r in api], [r["score"] for r in expected], atol=1e-3)
