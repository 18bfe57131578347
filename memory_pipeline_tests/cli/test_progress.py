"""Proves: the progress display of a command moves with the pipeline's stages and never shows a
count as "0/?": the command's own bar, whose total is unknown, shows only its spinner and time,
and each stage shows what is done of what its step announced (files read of the tenant's files,
chunks embedded of those to embed), the totals of later steps joining the bar's."""

from __future__ import annotations

import io

from rich.console import Console
from rich.progress import Progress

from memory_pipeline import progress
from memory_pipeline.cli.runs import Bars, progress_columns


def _shown(bar: Progress) -> list[tuple[str, str]]:
    """(description, count) of each bar as drawn; the count is '' when none is drawn."""
    out = io.StringIO()
    Console(file=out, width=120, color_system=None).print(bar.make_tasks_table(bar.tasks))
    rows = []
    for line in out.getvalue().splitlines():
        description, rest = line[2:].split("━", 1)
        words = rest.strip("━ ").split()
        rows.append((description.strip(), words[0] if "/" in words[0] else ""))
    return rows


def test_stage_counts_have_totals_and_the_command_bar_never_shows_0_of_unknown():
    bar = Progress(*progress_columns(), auto_refresh=False, console=Console(file=io.StringIO()))
    bars = Bars(bar, "indexing", None, "runs")
    with progress.listening(bars.on_step):
        assert _shown(bar) == [("indexing", "")]
        for _ in range(2):
            progress.advance("files read", 1, 3)
        progress.advance("chunks embedded", 16, 40)
        progress.advance("files read", 1, 3)
        progress.advance("files read", 1, 2)  # the next tenant's step: its 2 files join the total
    assert _shown(bar) == [("indexing", ""), ("files read", "4/5"), ("chunks embedded", "16/40")]
    bars.advance(1)
    assert _shown(bar)[0] == ("indexing", "")  # a count without a total is not a fraction
