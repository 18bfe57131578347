"""Proves: README's "Python API" example runs as written on the indexed sample (search with
citations, get, inject, typed memories stored, queried, recalled and forgotten) and prints what
it says it does."""

from __future__ import annotations

import contextlib
import io
import re

from memory_pipeline_tests.helpers import REPO


def readme_example() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Python API\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 1
    return blocks[0]


def test_the_readme_example_runs(world):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(readme_example(), "README.md#python-api", "exec"), {})
    printed = out.getvalue()
    assert re.search(r"^\d\.\d\d  support-bot/\S+#L\d+-L\d+  ", printed, flags=re.M), printed
    assert "## Relevant memory" in printed
    assert "['Alice wants invoices sent by email']" in printed
    assert "Alice wants invoices sent by email\n" in printed
