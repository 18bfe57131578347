"""Fixtures of the hardening tests: the leaky workspace after every stage of the pipeline ran (the
S3 endpoint of the object-storage tests is the top-level ``s3`` fixture)."""

from __future__ import annotations

import shutil

import dagster as dg
import pytest

from memory_pipeline_tests.helpers.hardening import build_leaky_workspace, run_everything


@pytest.fixture(scope="session")
def leaky(in_memory):
    """The leaky workspace after every stage ran: (base folder, root, LanceDB URI, results).

    The Dagster instance lives in ``base/dagster``; tests that change anything work on a copy
    (``leaky_copy``).
    """
    base = in_memory / "leaky"
    base.mkdir()
    root, lance_uri = base / "agents", str(base / "lancedb")
    root.mkdir()
    (base / "dagster").mkdir()
    build_leaky_workspace(root)
    with dg.instance_for_test(temp_dir=str(base / "dagster")) as instance:
        results = run_everything(root, lance_uri, instance)
    return base, root, lance_uri, results


@pytest.fixture
def leaky_copy(leaky, in_memory_path):
    """A copy of the leaky workspace's base folder for one test."""
    shutil.copytree(leaky[0], in_memory_path, dirs_exist_ok=True)
    return in_memory_path
