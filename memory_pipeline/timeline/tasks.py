"""Tasks ticked off: an open task of a note ("- [ ] Send Fiona the abstract") that a later note
lists as done in the same words ("- [x] Send Fiona the abstract", or the item struck through) is
no longer to do. Supersession (``supersede.detect``) records the open line as replaced by the later one, so
the todo read from it leaves the working memory, bulletins and queries as any replaced memory does.
"""

from __future__ import annotations

from collections.abc import Sequence

from memory_pipeline.text.memory_types import DONE, OPEN
from memory_pipeline.text.statements import Statement


def _task_words(text: str) -> str:
    return " ".join(text.casefold().split()).rstrip(".!;,")


def ticked_off(statements: Sequence[Statement]) -> list[tuple[Statement, Statement]]:
    """Each open task and the first later line ticking it off (case, spacing and a closing stop aside)."""
    done: dict[str, list[Statement]] = {}
    for s in sorted((s for s in statements if s.task == DONE), key=lambda s: s.order):
        done.setdefault(_task_words(s.text), []).append(s)
    out = []
    for s in (s for s in statements if s.task == OPEN):
        later = next((d for d in done.get(_task_words(s.text), ()) if d.order > s.order), None)
        if later is not None:
            out.append((s, later))
    return out
