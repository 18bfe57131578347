"""What commands print: tables and lines for people on stdout, JSON for programs on stdout,
progress and errors on stderr."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Sequence

from rich.console import Console

console = Console()
err = Console(stderr=True)


def print_json(value) -> None:
    """Clean JSON on stdout: nothing else is printed there by a command given ``--json``."""
    sys.stdout.write(json.dumps(value, indent=2, default=str, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def print_result(value, as_json: bool, for_people: Callable[[], None]) -> None:
    """``value`` as JSON for programs (``--json``), or what ``for_people`` prints for people."""
    if as_json:
        print_json(value)
    else:
        for_people()


def say(text: str) -> None:
    """A line for people, printed as written (no markup: memory text may hold brackets)."""
    console.print(text, markup=False, highlight=False, soft_wrap=True)


def summary_table(title: str, columns: Sequence[str], rows: Iterable[Sequence], **table_options) -> None:
    from rich.table import Table

    table = Table(title=title, title_justify="left", **table_options)
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*(str(cell) for cell in row))
    console.print(table)
