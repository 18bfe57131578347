"""Dagster runs as a command makes them: quiet, with progress, summed up over every run.

A command may make several runs (one per stretch of tenants that are neighbours among the
partitions); its summary covers all of them, never only the last.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from memory_pipeline.cli.app import dagster_log_level
from memory_pipeline.cli.output import err, summary_table


def run_config() -> dict:
    """Dagster's console logger off the terminal unless ``-v``: the event log keeps everything."""
    return {"loggers": {"console": {"config": {"log_level": dagster_log_level()}}}}


def instance():
    """The local instance, after the monitoring pass the daemon would make: the CLI runs none, so
    runs of this home whose worker was killed are marked failed here (``run_workers``)."""
    from memory_pipeline.orchestration.instance.run_workers import end_dead_runs, in_flight_runs
    from memory_pipeline.orchestration.runs import local_instance

    home = local_instance()
    end_dead_runs(home, in_flight_runs(home, lambda run: True))
    return home


def defs():
    from memory_pipeline.definitions import defs

    return defs


class Bars:
    """One bar for the command's own work, and one per stage the pipeline reports (files read,
    chunks embedded), each with its rate and, when the stage knows its total, an ETA."""

    def __init__(self, bar, description: str, total: int | None, unit: str):
        self.bar = bar
        self.main = bar.add_task(description, total=total, unit=unit)
        self.stages: dict[str, tuple[int, list[int]]] = {}  # stage -> (task, [left in this step])

    def advance(self, n: int = 1, description: str | None = None) -> None:
        self.bar.update(self.main, advance=n, **({"description": description} if description else {}))

    def on_step(self, stage: str, n: int, total: int | None) -> None:
        if stage not in self.stages:
            self.stages[stage] = (self.bar.add_task(stage, total=None, unit=stage.split()[0]), [0])
        task, left = self.stages[stage]
        if total is not None and left[0] <= 0:  # a new step (run) starts: its total joins the bar's
            done = next(t.completed for t in self.bar.tasks if t.id == task)
            self.bar.update(task, total=done + total)
            left[0] = total
        left[0] -= n
        self.bar.update(task, advance=n)


def progress_columns() -> list:
    """Spinner, description, bar, count, rate, elapsed, ETA. A count whose total is not known yet
    shows what is done so far, or nothing: never "0/?" (the command's own bar, before its runs
    report, kept saying "indexing 0/?" while the stage bars moved)."""
    from rich.progress import (
        BarColumn, ProgressColumn, SpinnerColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn,
    )
    from rich.text import Text

    class Count(ProgressColumn):
        def render(self, task) -> Text:
            done = int(task.completed)
            if task.total is None:
                return Text(f"{done:,}" if done else "", style="progress.download")
            return Text(f"{done:,}/{int(task.total):,}", style="progress.download")

    class Rate(ProgressColumn):
        def render(self, task) -> Text:
            return Text(f"{task.speed:,.1f} {task.fields.get('unit', '')}/s" if task.speed else "", style="dim")

    return [SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), Count(), Rate(),
            TimeElapsedColumn(), TimeRemainingColumn()]


@contextmanager
def progress(description: str, total: int | None, unit: str) -> Iterator[Bars]:
    """Progress bars on stderr (elapsed, rate, ETA) while a command works.

    Off when stderr is not a terminal, so logs and pipes stay clean.
    """
    from rich.progress import Progress

    from memory_pipeline.progress import listening

    with Progress(*progress_columns(), console=err(), transient=True, disable=not err().is_terminal) as bar:
        bars = Bars(bar, description, total, unit)
        with listening(bars.on_step):
            yield bars


def consolidate(defs, instance, tenants: list[str], scope: dict | None = None) -> tuple[list, list]:
    """The consolidation runs of ``tenants``, as few as their partitions allow (one per stretch of
    neighbours: ``plan_tenant_runs``), with a bar of runs: (results, runs)."""
    from memory_pipeline.consolidation.launch import plan_tenant_runs, run_consolidation

    planned = plan_tenant_runs(instance, tenants)
    with progress("consolidating", len(planned), "runs") as bars:
        def starting(run) -> None:
            if run != planned[0]:
                bars.advance(1)
            bars.advance(0, f"consolidating {run.label}")

        results = run_consolidation(defs, instance, tenants, scope, run_config(), on_run=starting)
        bars.advance(1 if planned else 0)
    return results, planned


MAX_NOTES = 20


def run_notes(results: list) -> list[str]:
    """The warnings and errors the runs logged (a skipped file and why, an LLM fallback, a tenant
    not processed), in order."""
    import logging

    if not results:
        return []
    home = instance()
    return [
        entry.user_message for result in results for entry in home.all_logs(result.run_id)
        if entry.dagster_event is None and entry.level >= logging.WARNING
    ]


def print_notes(notes: list[str]) -> None:
    """Notes on stderr, at most MAX_NOTES of them (stdout stays the command's output)."""
    from rich.text import Text

    for note in notes[:MAX_NOTES]:
        err().print(Text(f"warning: {note}"), soft_wrap=True)
    if len(notes) > MAX_NOTES:
        err().print(f"... and {len(notes) - MAX_NOTES} more warning(s) (-v shows each as it happens)", highlight=False)


def summarize(results: list, tenants: list[str], started: float, extra: dict | None = None) -> dict:
    """Every run's figures: numbers per asset added up over the runs, checks passed in all.

    Without -v (Dagster's console logger off), the runs' warnings are printed on stderr here, so
    a skipped file or an LLM fallback is never silent."""
    from memory_pipeline.cli.app import flags

    if not flags.verbose:
        print_notes(run_notes(results))

    assets: dict[str, dict] = {}
    checks: dict[str, bool] = {}
    if results:  # Dagster's helpers: a command that made no run (nothing to dream) never loads them
        from memory_pipeline.orchestration.runs import materialization_metadata

    for result in results:
        for asset, values in materialization_metadata(result, timings=False).items():
            into = assets.setdefault(asset, {})
            for key, value in values.items():
                into[key] = into.get(key, 0) + value
        for event in result.all_events:
            if event.event_type_value == "ASSET_CHECK_EVALUATION":
                data = event.asset_check_evaluation_data
                checks[data.check_name] = checks.get(data.check_name, True) and data.passed
    return {
        "tenants": tenants,
        "runs": [r.run_id for r in results],
        "success": all(r.success for r in results),
        "seconds": round(time.perf_counter() - started, 2),
        **(extra or {}),
        "assets": assets,
        "checks": checks,
    }


def print_summary(title: str, summary: dict) -> None:
    """The short table a person reads at the end of a command that ran the pipeline."""
    rows = [(asset, ", ".join(f"{k} {v}" for k, v in values.items())) for asset, values in summary["assets"].items()]
    if summary["checks"]:
        failed = [name for name, ok in summary["checks"].items() if not ok]
        rows.append(("checks", f"{len(summary['checks']) - len(failed)} passed" + (f", failed: {', '.join(failed)}" if failed else "")))
    runs = len(summary["runs"])
    summary_table(
        f"{title}: {len(summary['tenants'])} tenant(s), {runs} run(s), {summary['seconds']} s"
        + ("" if summary["success"] else " [bold red]FAILED[/]"),
        ("asset", "figures"),
        rows,
    )
