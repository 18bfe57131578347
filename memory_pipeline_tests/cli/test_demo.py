"""Proves: the demo's preview of a dreamed file ends at a whole line and says how many lines it
left out, whatever the limit (it stopped mid-line); a short file is shown whole."""

from __future__ import annotations

from memory_pipeline.cli.demo import preview

DREAMED = "# Dreamed\n\n## Preferences\n- Prefers email [s1 · a.jsonl#L3]\n- Meetings before 16:00 [s2 · b.jsonl#L5]\n"


def test_the_preview_keeps_whole_lines_and_counts_the_rest():
    assert preview(DREAMED, 1000) == DREAMED.rstrip("\n")
    assert preview(DREAMED, 50) == "# Dreamed\n\n## Preferences\n... 2 more line(s)"
    for limit in range(1, len(DREAMED) + 2):
        shown = preview(DREAMED, limit).split("\n... ")[0].splitlines()
        assert shown == DREAMED.splitlines()[: len(shown)] and shown  # whole lines, never a cut one
