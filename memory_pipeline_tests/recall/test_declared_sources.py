"""Proves: a new process that imports only recall finds the sources the slices declare (typed
memories' ``facts``) with no call to register them, and without recall importing the slice."""

from __future__ import annotations

import json
import subprocess
import sys

from memory_pipeline_tests.helpers import REPO

PROBE = """
import json, sys
from memory_pipeline.recall.registry import known_sources
before = "memory_pipeline.memories.recall_source" in sys.modules
sources = known_sources()
print(json.dumps({"before": before, "names": sorted(sources), "facts_table": sources["facts"].table}))
"""


def test_recall_finds_the_declared_sources_in_a_new_process():
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["before"] is False  # importing recall did not import the slice
    assert {"memory", "sessions", "episodes", "facts"} <= set(found["names"])
    assert found["facts_table"] == "memories"
