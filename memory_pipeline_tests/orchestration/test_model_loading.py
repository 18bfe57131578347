"""Proves: the models load once per process, however many runs the process executes.

A CLI command or a demo executes several consolidation runs in one process (one per tenant);
Dagster builds the resources again for every run, so the embedder and both spaCy pipelines must
come from process-wide caches keyed by their settings, or every run would pay the load again
(spaCy ~1-4 s each, the embedder ~0.6 s, DESIGN.md section 10). A loaded model is kept out of
the garbage collector's passes, which would otherwise walk its objects again in every full
collection for as long as the process lives.
"""

from __future__ import annotations

import gc

import dagster as dg
import pytest

from memory_pipeline.consolidation.assets import consolidation_assets, consolidation_job, scope_config
from memory_pipeline.consolidation.launch import run_consolidation
from memory_pipeline.orchestration import resources
from memory_pipeline.orchestration.resources import EmbedderResource
from memory_pipeline.text import statements
from memory_pipeline_tests.helpers import make_resources
from memory_pipeline_tests.helpers.consolidation import ALICE

LOADERS = {"embedder": resources._embedder, "spaCy": statements.load_nlp}


def test_the_embedder_cache_is_keyed_by_its_settings():
    assert EmbedderResource(kind="hash").get() is EmbedderResource(kind="hash").get()
    assert EmbedderResource(kind="hash", batch_size=8).get() is not EmbedderResource(kind="hash").get()


def test_a_loaded_model_is_out_of_the_collectors_passes():
    nlp, embedder = statements.load_nlp(), EmbedderResource(kind="minilm").get()
    fresh = {"made after": []}
    walked = {id(o) for o in gc.get_objects()}  # what a full collection walks
    assert {id(nlp), id(nlp.vocab), id(embedder.model)}.isdisjoint(walked)
    assert id(fresh) in walked  # objects made later are collected as usual


@pytest.mark.slow
def test_runs_after_the_first_load_no_model(sample_root, lance_uri, instance):
    defs = dg.Definitions(assets=consolidation_assets, jobs=[consolidation_job], resources=make_resources(sample_root, lance_uri))
    days = ["2026-10-26", "2026-10-30", "2026-11-11"]
    before = {name: load.cache_info().misses for name, load in LOADERS.items()}
    assert all(r.success for r in run_consolidation(defs, instance, [ALICE], scope_config(days[:1])))
    first = {name: load.cache_info().misses for name, load in LOADERS.items()}
    # Two more runs (10-30, then 11-11): each builds its resources again.
    more = [r for day in days[1:] for r in run_consolidation(defs, instance, [ALICE], scope_config([day]))]
    assert len(more) == 2 and all(r.success for r in more)
    assert {name: load.cache_info().misses for name, load in LOADERS.items()} == first
    assert all(first[name] - before[name] <= 1 for name in LOADERS)  # loaded at most once, by the first run
