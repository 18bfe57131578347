"""``Rows``: one tenant's searchable rows of one source, the shape every recall source produces.

A source either hands over Python lists (small tables: episodes, facts) or one Arrow table
(``Rows.from_table``, the L0 chunks), whose columns stay Arrow and are read a row at a time:
a query reads a few hundred rows of a tenant, never all of them, and a million rows held as
Python strings cost 0.9 GB where the Arrow columns cost a third of that and, read from a
persisted snapshot (``index/files.py``), nothing until a page is touched.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_SPEAKER_RE = re.compile(r"^([^\n():]{1,60}?) \(\d{4}-\d{2}-\d{2}[ T][\d:]+\): ", re.MULTILINE)

# The columns of ``Rows.from_table``, as ``ChunkSource`` builds them and snapshots store them.
TABLE_COLUMNS = ("id", "source", "path", "start_line", "end_line", "turn_ids", "text", "text_hash", "day", "when")


class ArrowColumn:
    """A read-only sequence over an Arrow column: ``col[i]`` is the Python value of row ``i``."""

    def __init__(self, array: pa.Array | pa.ChunkedArray):
        self.arrow = array

    def __len__(self) -> int:
        return len(self.arrow)

    def __getitem__(self, i: int):
        return self.arrow[int(i)].as_py()

    def __iter__(self) -> Iterator:
        for chunk in self.arrow.chunks if isinstance(self.arrow, pa.ChunkedArray) else [self.arrow]:
            yield from chunk.to_pylist()

    def __eq__(self, other) -> bool:
        return list(self) == list(other)


class IdPositions(Mapping):
    """Row of each id by binary search over the ids sorted as bytes: no dict of a million ids.

    ``keys`` (sorted, fixed-width bytes) and ``rows`` may be memory-mapped arrays.
    """

    def __init__(self, keys: np.ndarray, rows: np.ndarray):
        self.keys, self.rows = keys, rows

    @classmethod
    def of(cls, ids: pa.Array | pa.ChunkedArray) -> IdPositions:
        raw = np.array(ids.cast(pa.binary()).to_numpy(zero_copy_only=False), dtype=bytes)
        order = np.argsort(raw, kind="stable")
        return cls(raw[order], order.astype(np.int64))

    def _find(self, key) -> int:
        if not isinstance(key, str) or not self.keys.size:
            return -1
        raw = key.encode()
        at = int(np.searchsorted(self.keys, raw))
        return int(self.rows[at]) if at < len(self.keys) and self.keys[at] == raw else -1

    def __getitem__(self, key) -> int:
        row = self._find(key)
        if row < 0:
            raise KeyError(key)
        return row

    def __contains__(self, key) -> bool:
        return self._find(key) >= 0

    def __iter__(self):
        raise TypeError("IdPositions is for lookups; iterate the ids instead")

    def __len__(self) -> int:
        return len(self.keys)


@dataclass
class Rows:
    """One tenant's searchable rows of one source table, columnar, in (path, line) order."""

    tenant: str
    ids: list[str]
    source: np.ndarray  # object array of source names
    path: list[str]
    start_line: np.ndarray
    end_line: np.ndarray
    turn_ids: list[list[str]]
    text: list[str]
    text_hash: list[str]
    day: list[date | None]  # the date that decays (dated notes), else None
    when: list[datetime | None]  # when the row happened (transcript window start, creation)
    vectors: np.ndarray  # float32, one unit row per id
    expires: list[datetime | None] | None = None  # rows past this instant are not recalled
    position: Mapping[str, int] | None = None
    prev_row: np.ndarray | None = None  # the row before this row's span in its file, -1 (``_neighbours``)
    next_row: np.ndarray | None = None
    _speakers: list[tuple[str, ...]] | None = None
    fingerprint: str | None = None  # of the rows as read (``TenantCache``), when the source has one
    table: pa.Table | None = None  # the columns as Arrow (``from_table``): what a snapshot stores
    files: object | None = None  # the tenant's persisted indices (``index.files.TenantFiles``)
    cites: list[str | None] | None = None  # the statement (``path#Lline``) a derived row was read from
    _indices: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._ann_lock, self._text_lock = threading.Lock(), threading.Lock()
        if self.position is None:
            self.position = {row_id: i for i, row_id in enumerate(self.ids)}
        if self.expires is not None and all(e is None for e in self.expires):
            self.expires = None
        n = len(self.ids)
        if self.prev_row is None and n == 0:
            self.prev_row, self.next_row = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        elif self.prev_row is None:
            self.prev_row, self.next_row = _neighbours(self.path, self.source, self.start_line, self.end_line)

    @classmethod
    def from_table(cls, tenant: str, table: pa.Table, vectors, **extra) -> Rows:
        """Rows over ``table`` (columns ``TABLE_COLUMNS``), read a row at a time."""
        source = table.column("source")
        if extra.get("position") is None:  # a persisted snapshot brings its own (sorting 1M ids: 0.5 s)
            extra["position"] = IdPositions.of(table.column("id"))
        codes = pc.dictionary_encode(source).combine_chunks() if len(source) else None
        return cls(
            tenant=tenant,
            ids=ArrowColumn(table.column("id")),
            source=(
                np.array(codes.dictionary.to_pylist(), dtype=object)[codes.indices.to_numpy(zero_copy_only=False)]
                if codes is not None else np.zeros(0, dtype=object)
            ),
            path=ArrowColumn(table.column("path")),
            start_line=table.column("start_line").to_numpy().astype(np.int64, copy=False),
            end_line=table.column("end_line").to_numpy().astype(np.int64, copy=False),
            turn_ids=ArrowColumn(table.column("turn_ids")),
            text=ArrowColumn(table.column("text")),
            text_hash=ArrowColumn(table.column("text_hash")),
            day=ArrowColumn(table.column("day")),
            when=ArrowColumn(table.column("when")),
            vectors=vectors,
            table=table,
            **extra,
        )

    def __len__(self) -> int:
        return len(self.ids)

    def ann_index(self, lists: int | None = None):
        """The IVF index of these rows: persisted, else built on first use (and persisted)."""
        with self._ann_lock:
            index = self._indices.get("ann")
            if index is None:
                from memory_pipeline.recall.index.ann import IvfIndex

                index = self.files.load_ivf() if self.files is not None else None
                if index is None:
                    centroids = self.files.previous_centroids(len(self)) if self.files is not None else None
                    index = IvfIndex(np.asarray(self.vectors), lists, centroids=centroids)
                    if self.files is not None:
                        self.files.save_ivf(index)
                self._indices["ann"] = index
                self.vectors = index.vectors()  # the index's grouped copy is the only one kept
                release_freed_memory()
            return index

    def text_index(self):
        """The BM25 index of these rows' text: persisted, else built on first use (and persisted)."""
        with self._text_lock:
            index = self._indices.get("bm25")
            if index is None:
                from memory_pipeline.recall.index.bm25 import TextIndex

                index = self.files.load_bm25() if self.files is not None else None
                if index is None:
                    index = TextIndex(self.text.arrow if isinstance(self.text, ArrowColumn) else self.text)
                    if self.files is not None:
                        self.files.save_bm25(index)
                self._indices["bm25"] = index
                release_freed_memory()
            return index

    def source_mask(self, names: tuple[str, ...]) -> np.ndarray:
        """Rows of these sources (computed once per set of names; rows never change)."""
        masks = self._indices.setdefault("masks", {})
        if names not in masks:
            masks[names] = np.isin(self.source, list(names))
        return masks[names]

    def expired(self, i: int, now: datetime) -> bool:
        return self.expires is not None and self.expires[i] is not None and self.expires[i] <= now

    def content(self, i: int) -> str:
        """Row text without the ``Speaker (date time): `` prefixes of transcript turns."""
        if self.source[i] != "sessions":
            return self.text[i]
        return _SPEAKER_RE.sub("", self.text[i])

    def speakers(self, i: int) -> tuple[str, ...]:
        """Speakers of the transcript turns in row ``i`` (lines written by ``format_turn``)."""
        if self._speakers is None:
            self._speakers = [()] * len(self.ids)
        if not self._speakers[i] and self.source[i] == "sessions":
            self._speakers[i] = tuple(m.strip() for m in _SPEAKER_RE.findall(self.text[i]))
        return self._speakers[i]


def _neighbours(path, source: np.ndarray, start_line, end_line) -> tuple[np.ndarray, np.ndarray]:
    """Each row's adjacent rows before and after in its file (-1 at a file's ends).

    The pieces of one span (a long turn is cut into pieces that all cite its line) are one unit:
    a piece's neighbours are the spans around its own, so a piece is read with the turn it answers
    and the turn that answers it, not with another piece of itself."""
    n = len(source)
    same_file = _same_as_previous(path, source)
    start, end = np.asarray(start_line), np.asarray(end_line)
    new_span = np.concatenate([[True], ~(same_file & (start[1:] == start[:-1]) & (end[1:] == end[:-1]))])
    firsts = np.flatnonzero(new_span)
    span = np.cumsum(new_span) - 1
    first = firsts[span]  # the first row of each row's span, and its last
    last = np.append(firsts[1:] - 1, n - 1)[span]
    before = np.zeros(n, dtype=bool)
    before[first > 0] = same_file[first[first > 0] - 1]
    after = np.zeros(n, dtype=bool)
    after[last < n - 1] = same_file[last[last < n - 1]]
    return np.where(before, first - 1, -1), np.where(after, last + 1, -1)


def _same_as_previous(path, source: np.ndarray) -> np.ndarray:
    """For rows 1..n-1: whether the row is of the same file and source as the one before."""
    n = len(source)
    if n < 2:
        return np.zeros(max(n - 1, 0), dtype=bool)
    if isinstance(path, ArrowColumn):
        column = path.arrow
        same = pc.equal(column.slice(1), column.slice(0, n - 1)).to_numpy(zero_copy_only=False)
    else:
        values = np.array(path, dtype=object)
        same = values[1:] == values[:-1]
    return np.asarray(same, dtype=bool) & (source[1:] == source[:-1])


def release_freed_memory() -> None:
    """Hand the pages freed after loading a tenant or building its indices back to the system.

    LanceDB returns a tenant's rows through the C allocator, which keeps freed pages for reuse:
    without this, a 1M-row tenant's read (2.2 GB, vectors included) stays resident after its rows
    are copied out, and the BM25 build's sort buffers (0.5 GB) after it, more than doubling what
    the tenant costs (``bench/recall.py`` reports the figure).
    """
    import ctypes

    pa.default_memory_pool().release_unused()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to trim
        pass


def vector_matrix(arrow: pa.Table, order: np.ndarray | None = None, column: str = "vector") -> np.ndarray:
    """The vector column as one float32 matrix, rows in ``order`` (default: as stored).

    Each Arrow chunk is read in place and scattered into the result, so a tenant's vectors are
    copied once, never combined or sorted as Arrow first.
    """
    col = arrow.column(column)
    n = len(col)
    if n == 0:
        return np.zeros((0, 0), dtype=np.float32)
    dim = col.type.list_size
    out = np.empty((n, dim), dtype=np.float32)
    dest = np.arange(n) if order is None else np.empty(n, dtype=np.int64)
    if order is not None:
        dest[order] = np.arange(n)
    lo = 0
    for chunk in col.chunks:
        m = len(chunk)
        if m:
            flat = chunk.flatten().to_numpy(zero_copy_only=False)
            out[dest[lo : lo + m]] = flat.reshape(m, dim)
        lo += m
    return out


def sorted_without_vectors(arrow: pa.Table, keys: list[tuple[str, str]]) -> tuple[pa.Table, np.ndarray]:
    """The table without its vectors, sorted by ``keys``, and the order that sorts it."""
    order = pc.sort_indices(arrow.select([k for k, _ in keys]), sort_keys=keys)
    rest = arrow.drop_columns([c for c in ("vector",) if c in arrow.column_names])
    # Taken by the Arrow indices: NumPy ones make Arrow import numpy.ma (0.02 CPU s a process).
    return rest.take(order), order.to_numpy()


def mapped_file(array) -> Path | None:
    """The file a whole ``np.load(mmap_mode="r")`` array maps, if it is one (not a part of it)."""
    if not isinstance(array, np.memmap) or not array.filename or not array.flags.c_contiguous:
        return None
    try:
        whole = np.load(array.filename, mmap_mode="r")
    except (OSError, ValueError):
        return None
    same = whole.shape == array.shape and whole.dtype == array.dtype and whole.offset == array.offset
    return Path(array.filename) if same else None


def rows_fingerprint(arrow: pa.Table, columns: tuple[str, ...]) -> str | None:
    """A digest of the rows' ``columns``, independent of the order LanceDB returns rows in."""
    if not columns or any(c not in arrow.column_names for c in columns):
        return None
    part = arrow.select(list(columns))
    part = part.take(pc.sort_indices(part, sort_keys=[(c, "ascending") for c in columns]))
    digest = hashlib.blake2b(digest_size=16)
    digest.update(str(part.num_rows).encode())
    for column in part.combine_chunks().columns:
        for chunk in column.chunks:
            for buffer in chunk.buffers():
                if buffer is not None:
                    digest.update(buffer)
    return digest.hexdigest()
