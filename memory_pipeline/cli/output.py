"""What commands print: tables and lines for people on stdout, JSON for programs on stdout,
progress and errors on stderr."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Sequence
from functools import cache


@cache
def console():
    """stdout through rich, made when first printed to: importing rich takes 0.03 CPU s, which a
    command answering ``--json`` never needs."""
    from rich.console import Console

    return Console()


@cache
def err():
    """stderr through rich (progress, warnings), made when first printed to."""
    from rich.console import Console

    return Console(stderr=True)


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
    console().print(text, markup=False, highlight=False, soft_wrap=True)


def clip(text: str, limit: int) -> str:
    """At most ``limit`` characters of ``text`` for people: a longer text is cut after its last
    whole word that fits (within the last fifth; a long word or a URL is cut where it reaches the
    limit) and ends in an ellipsis, so a cut never reads as a word ("Edinburgh" as "Edin")."""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    if head[-1:].isalnum() and text[limit - 1].isalnum():  # the cut falls inside a word: back to its start
        whole_words = head.rsplit(None, 1)[0]
        if len(whole_words) >= limit * 4 // 5:
            head = whole_words
    return head.rstrip() + "…"


def quoted(text: str, limit: int = 80) -> str:
    """What a person asked, quoted in a line about it: at most ``limit`` characters of it, so a
    pasted page comes back as its start and an ellipsis, not as the page again."""
    return repr(clip(text, limit))


def summary_table(title: str, columns: Sequence[str], rows: Iterable[Sequence], **table_options) -> None:
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title, title_justify="left", **table_options)
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*(Text(str(cell)) for cell in row))  # cells as written: memory text may hold brackets
    console().print(table)


def print_records(title: str, records: Iterable[tuple[str, str]]) -> None:
    """Results for people as records: a header line (ids, dates, labels never wrapped, so an id is
    copied in one piece into the next command) and the text below it, indented, wrapped to the
    terminal; unlike a table's columns it reads at any width."""
    from rich.padding import Padding
    from rich.text import Text

    say(title)
    for header, body in records:
        console().print(Text(header, style="bold"), soft_wrap=True)
        if body:
            console().print(Padding(Text(body), (0, 0, 0, 4), expand=False))


def superseded_label(note: dict | None) -> str:
    """``[superseded 2026-11-18 by <citation>] `` for a result a later statement replaced, else ''."""
    if not note:
        return ""
    return f"[superseded{' ' + note['at'] if note.get('at') else ''} by {note.get('by')}] "
