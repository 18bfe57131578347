"""A tenant's recall indices on disk, so a new process answers its first query without rebuilding.

Without them, the first search of a 1M-chunk tenant in a new process took 37 s (13 s reading
rows, 13 s k-means, 9 s BM25) and 2.5 GB, after every restart. Here a tenant's rows (an Arrow
IPC snapshot of the columns recall reads, without the vectors), its vectors or IVF lists, its
BM25 postings and its id lookup are written once per fingerprint (``TenantCache``: the tenant's
chunk ids and write times) and read back memory-mapped (``np.load(mmap_mode="r")``, Arrow IPC):
a query touches the pages it reads, the rest stay on disk and out of the process's own memory.

Where: for a local LanceDB folder, in its sub-folder ``_recall_index/<table>/<tenant>/<fingerprint>/``
(LanceDB lists only ``*.lance`` folders as tables). On object storage, under the same prefix
beside the tables, and each machine serves a copy in its cache folder (``MEMORY_PIPELINE_CACHE_DIR``):
a new worker fetches a tenant's folder once instead of reading its rows and rebuilding. A folder
is complete before it appears (written beside it, then renamed; uploaded, ``meta.json`` last,
before it appears in the builder's cache); files added later (IVF lists, BM25 postings, built on
first use) each appear by a rename, the file marking them complete last. Anything missing or
unreadable falls back to LanceDB and a rebuild.

A changed tenant's new folder is made from the previous one and the rows that changed
(``update.py``): nothing unchanged is read or tokenized again, the IVF's grouped vectors
are linked, not copied, and the previous folder is removed. ``forget_tenant`` removes the
tenant's folders (``forget_index_files``) on the store and in this machine's cache; another
machine drops its copy on its next load of the tenant, finding the store's folder gone.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import time
import uuid
from contextlib import suppress
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa

from memory_pipeline.query_encoder import cache_dir
from memory_pipeline.recall.index.kept_reads import KEPT
from memory_pipeline.recall.rows import IdPositions, Rows, mapped_file
from memory_pipeline.store import lance_files, object_store

log = logging.getLogger(__name__)

INDEX_FOLDER = "_recall_index"
FORMAT = 2  # 2: write times in the rows, word counts in the BM25 postings, IVF tails
_SAFE = re.compile(r"^[A-Za-z0-9_.~-]{1,160}$")
# centroids last: it marks the set complete
_IVF = ("order", "offsets", "grouped", "tail_order", "tail_offsets", "tail_grouped", "trained_on", "centroids")
_BM25 = ("scores", "members", "starts", "tf", "length", "dense_stems", "dense", "rows")


def index_root(uri: str) -> Path:
    """The local folder of recall's persisted indices: in a local database's folder; for object
    storage, this machine's copy of those beside the tables, in its cache folder."""
    if lance_files.is_local(uri):
        return Path(uri) / INDEX_FOLDER
    return cache_dir() / "recall_index" / hashlib.blake2b(str(uri).rstrip("/").encode(), digest_size=8).hexdigest()


def store_root(uri: str) -> object_store.Mirror | None:
    """The persisted indices beside the tables on object storage; None for a local database."""
    remote = object_store.filesystem(uri)
    return None if remote is None else object_store.Mirror(remote[0], f"{remote[1]}/{INDEX_FOLDER}")


def table_stamp(uri: str, table: str, version: int) -> list[int] | None:
    """What identifies a table's ``version`` (``lance_files.version_stamp``)."""
    return lance_files.version_stamp(uri, table, version)


def tenant_files(uri: str, table: str, tenant: str) -> TenantFiles | None:
    if not _SAFE.match(tenant) or ".." in tenant or not _SAFE.match(table):
        return None
    remote = store_root(uri)
    mirror = None if remote is None else object_store.Mirror(remote.store, f"{remote.path}/{table}/{tenant}")
    return TenantFiles(index_root(uri) / table / tenant, mirror)


def forget_index_files(uri: str, forgotten: Callable[[str], bool]) -> list[str]:
    """Delete the persisted indices of every tenant key ``forgotten`` accepts, in every table;
    the folders removed (relative to the LanceDB folder)."""
    root = index_root(uri)
    removed: list[str] = []
    remote = store_root(uri)
    for table in remote.folders() if remote is not None else ():
        tenants = object_store.Mirror(remote.store, f"{remote.path}/{table}")
        removed += [f"{uri}/{INDEX_FOLDER}/{table}/{t}" for t in tenants.folders() if forgotten(t) and tenants.remove(t)]
    if not root.is_dir():
        return removed
    for folder in sorted(root.glob("*/*")):
        if folder.is_dir() and forgotten(folder.name):
            shutil.rmtree(folder)
            removed.append(str(folder.relative_to(root.parent)))
    return removed


def forget_table_files(uri: str, table: str) -> list[str]:
    """Delete every tenant's persisted indices and kept reads of ``table`` (after its deleted rows
    were purged: no copy of them may stay); the folder removed, relative to the LanceDB folder."""
    if not _SAFE.match(table):
        return []
    root, remote = index_root(uri), store_root(uri)
    removed = [f"{uri}/{INDEX_FOLDER}/{table}"] if remote is not None and remote.remove(table) else []
    if (root / table).is_dir():
        shutil.rmtree(root / table)
        removed.append(str((root / table).relative_to(root.parent)))
    return removed


class TenantFiles:
    """The persisted indices of one (table, tenant); ``folder`` is set once a fingerprint is chosen.
    ``mirror``: their copy on object storage, of which ``tenant_dir`` is this machine's cache."""

    def __init__(self, tenant_dir: Path, mirror: object_store.Mirror | None = None):
        self.tenant_dir = tenant_dir
        self.mirror = mirror
        self.folder: Path | None = None
        self._previous_centroids: tuple[int, np.ndarray] | None = None

    def has_any(self) -> bool:
        """Whether any fingerprint folder of the tenant exists."""
        with suppress(OSError):
            if any(entry.is_dir() for entry in self.tenant_dir.iterdir()):
                return True
        return self.mirror is not None and bool(self.mirror.folders())

    def _cached(self, fingerprint: str) -> bool:
        """Whether ``fingerprint``'s folder is in this machine's cache, fetched from the store if
        need be; a cached copy whose original is gone from the store (forgotten) is deleted."""
        folder = self.tenant_dir / fingerprint
        if self.mirror is None:
            return folder.is_dir()
        if not self.mirror.has(f"{fingerprint}/meta.json"):
            shutil.rmtree(folder, ignore_errors=True)
            return False
        if folder.is_dir():
            return True
        tmp = self.tenant_dir / f".{fingerprint}.{uuid.uuid4().hex}.tmp"
        if self.mirror.fetch(fingerprint, tmp) and (tmp / "meta.json").exists():
            with suppress(OSError):  # fetched meanwhile by another process of this machine
                tmp.rename(folder)
        shutil.rmtree(tmp, ignore_errors=True)
        return folder.is_dir()

    def clear(self) -> None:
        """Remove every persisted fingerprint of the tenant (its kept reads stay)."""
        if self.mirror is not None:  # the store holds no kept reads: the tenant's whole folder
            self.mirror.remove()
        if self.tenant_dir.is_dir():
            for entry in self.tenant_dir.iterdir():
                if entry.is_dir():
                    shutil.rmtree(entry, ignore_errors=True)

    # -- rows -----------------------------------------------------------------------------------

    def load(self, tenant: str, fingerprint: str) -> Rows | None:
        """The tenant's rows of ``fingerprint``, memory-mapped, with whatever indices were saved."""
        folder = self.tenant_dir / fingerprint
        if not self._cached(fingerprint):
            return None
        try:
            meta = json.loads((folder / "meta.json").read_text())
            if meta.get("format") != FORMAT or meta.get("fingerprint") != fingerprint:
                return None
            self.folder = folder
            table = pa.ipc.open_file(pa.memory_map(str(folder / "rows.arrow"), "r")).read_all()
            ivf = self.load_ivf()
            vectors = ivf.vectors() if ivf is not None else self._array("vectors")
            position = IdPositions(self._array("id_keys"), self._array("id_rows"))
            rows = Rows.from_table(tenant, table, vectors, position=position, fingerprint=fingerprint, files=self)
        except (OSError, ValueError, KeyError, pa.ArrowException) as exc:
            if not isinstance(exc, FileNotFoundError):
                log.warning("recall index of %s unreadable (%s): rebuilt from the table", tenant, exc)
            self.folder = None
            return None
        if ivf is not None:
            rows._indices["ann"] = ivf
        return rows

    def snapshot(self, rows: Rows) -> None:
        """Write ``rows`` (built by ``Rows.from_table``) as the tenant's current fingerprint."""
        if rows.table is None or not rows.fingerprint or not isinstance(rows.position, IdPositions):
            return

        def fill(tmp: Path) -> None:
            with pa.ipc.new_file(str(tmp / "rows.arrow"), rows.table.schema) as writer:
                writer.write_table(rows.table)
            np.save(tmp / "vectors.npy", np.asarray(rows.vectors, dtype=np.float32))
            np.save(tmp / "id_keys.npy", np.asarray(rows.position.keys))
            np.save(tmp / "id_rows.npy", np.asarray(rows.position.rows))

        self._remember_centroids()
        if self.publish(rows.tenant, rows.fingerprint, len(rows), fill):
            rows.files = self

    def publish(self, tenant: str, fingerprint: str, count: int, fill: Callable[[Path], None]) -> bool:
        """Make ``fingerprint``'s folder: ``fill`` writes its files into a temporary folder, which
        is renamed into place once complete; earlier fingerprints are then removed."""
        final = self.tenant_dir / fingerprint
        tmp = self.tenant_dir / f".{fingerprint}.{uuid.uuid4().hex}.tmp"
        try:
            tmp.mkdir(parents=True)
            fill(tmp)
            meta = {"format": FORMAT, "fingerprint": fingerprint, "rows": count, "tenant": tenant}
            (tmp / "meta.json").write_text(json.dumps(meta))
            if self.mirror is not None:  # on the store before it is served here: see ``_cached``
                self.mirror.push(tmp, fingerprint, sorted(p.name for p in tmp.iterdir()), last=("meta.json",))
            try:
                tmp.rename(final)
            except OSError:  # another process wrote the same fingerprint first: keep its folder
                shutil.rmtree(tmp, ignore_errors=True)
        except OSError as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            log.warning("recall index of %s not saved (%s): it is rebuilt in the next process", tenant, exc)
            return False
        self.folder = final
        for name in set(self.mirror.folders() if self.mirror is not None else ()) - {fingerprint}:
            self.mirror.remove(name)
        for old in self.tenant_dir.iterdir():  # earlier fingerprints (and stale temporary folders)
            if old.name.startswith(f"{KEPT}."):  # a kept read (``kept_reads.py``)
                old.unlink(missing_ok=True)  # the tenant is served from its fingerprint folder now
            elif old != final and not (old.name.startswith(".") and old.name.endswith(".tmp") and _young(old)):
                shutil.rmtree(old, ignore_errors=True)
        return True

    def previous(self) -> str | None:
        """The fingerprint of the tenant's newest complete folder of this format, if any."""
        found: list[tuple[float, str]] = []
        if self.tenant_dir.is_dir():
            for folder in self.tenant_dir.iterdir():
                try:
                    meta = json.loads((folder / "meta.json").read_text())
                except (OSError, ValueError):
                    continue
                if meta.get("format") == FORMAT and meta.get("fingerprint") == folder.name:
                    found.append((folder.stat().st_mtime, folder.name))
        if not found and self.mirror is not None:  # a new machine: the store's (one) folder
            found = [(0, name) for name in self.mirror.folders() if self._cached(name)]
        return max(found)[1] if found else None

    def checked(self, stamp: list[int] | None) -> str | None:
        """The fingerprint found current at the table version ``stamp`` names, if one was: the
        table has not changed since, so neither has the tenant and nothing need be read."""
        if stamp is None:
            return None
        for folder in self.tenant_dir.iterdir() if self.tenant_dir.is_dir() else ():
            try:
                if json.loads((folder / "checked.json").read_text()) == stamp:
                    return folder.name
            except (OSError, ValueError):
                continue
        for name in self.mirror.folders() if self.mirror is not None else ():
            try:
                if json.loads(self.mirror.read(f"{name}/checked.json") or b"null") == stamp:
                    return name
            except ValueError:
                continue
        return None

    def mark_checked(self, stamp: list[int] | None) -> None:
        """Record that the current folder's fingerprint is the tenant's at ``stamp``."""
        if stamp is None or self.folder is None:
            return
        tmp = self.folder / f".checked.{uuid.uuid4().hex}.tmp"
        try:
            tmp.write_text(json.dumps(stamp))
            os.replace(tmp, self.folder / "checked.json")
        except OSError:
            tmp.unlink(missing_ok=True)
            return
        if self.mirror is not None:
            self.mirror.push(self.folder, self.folder.name, ["checked.json"])

    # -- IVF ------------------------------------------------------------------------------------

    def load_ivf(self):
        from memory_pipeline.recall.index.ann import IvfIndex

        if self.folder is None or not (self.folder / "ivf_centroids.npy").exists():
            return None
        parts = {name: self._array(f"ivf_{name}") for name in _IVF}
        tail = parts["tail_order"], parts["tail_offsets"], parts["tail_grouped"]
        if not (parts["offsets"][-1] == len(parts["order"]) == len(parts["grouped"])
                and parts["tail_offsets"][-1] == len(parts["tail_order"]) == len(parts["tail_grouped"])):
            return None  # caught between the files of a compaction: not used
        return IvfIndex.from_arrays(parts["centroids"], parts["order"], parts["grouped"], parts["offsets"],
                                    tail, int(parts["trained_on"][0]))

    def save_ivf(self, index, folder: Path | None = None) -> None:
        """Save the IVF lists (into ``folder``, default the current one), then serve them
        memory-mapped: the built copy is let go. Grouped vectors memory-mapped from an earlier
        folder of the tenant are linked, not copied."""
        arrays = index.arrays()
        if not self._save({f"ivf_{name}": arrays[name] for name in _IVF}, folder):
            return
        if folder is None:
            (self.folder / "vectors.npy").unlink(missing_ok=True)  # the lists hold every vector
            if self.mirror is not None:
                self.mirror.remove(f"{self.folder.name}/vectors.npy")
            index.order, index.grouped = self._array("ivf_order"), self._array("ivf_grouped")

    def compact_ivf(self, index):
        """The IVF with its tail folded in (``IvfIndex.compacted``), saved over the current
        folder's; the grouped vectors are written straight to their file (maintenance)."""
        tmp = self.folder / f".ivf_grouped.{uuid.uuid4().hex}.tmp.npy"
        try:
            compacted = index.compacted(
                lambda shape: np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32, shape=shape))
            compacted.grouped.flush()
            self.save_ivf(compacted)
        finally:
            tmp.unlink(missing_ok=True)
        compacted.tail_order, compacted.tail_grouped = self._array("ivf_tail_order"), self._array("ivf_tail_grouped")
        return compacted

    def previous_centroids(self, rows: int) -> np.ndarray | None:
        """The centroids of the tenant's previous fingerprint, if trained on a similar size."""
        if self._previous_centroids is None:
            return None
        trained_on, centroids = self._previous_centroids
        return centroids if trained_on / 2 <= rows <= trained_on * 2 else None

    def _remember_centroids(self) -> None:
        if not self.tenant_dir.is_dir():
            return
        for old in self.tenant_dir.iterdir():
            try:
                centroids = np.load(old / "ivf_centroids.npy")
                trained_on = int(np.load(old / "ivf_trained_on.npy")[0])
            except (OSError, ValueError, KeyError):
                continue
            self._previous_centroids = (int(trained_on), centroids)

    # -- BM25 -----------------------------------------------------------------------------------

    def load_bm25(self):
        from memory_pipeline.recall.index.bm25 import TextIndex

        if self.folder is None or not (self.folder / "bm25_vocab.arrow").exists():
            return None
        try:
            vocab = pa.ipc.open_file(pa.memory_map(str(self.folder / "bm25_vocab.arrow"), "r")).read_all()
            arrays = {name: self._array(f"bm25_{name}") for name in _BM25}
        except (OSError, ValueError, pa.ArrowException):
            return None
        return TextIndex.from_arrays(vocab.column("stem").to_pylist(), arrays)

    def save_bm25(self, index, folder: Path | None = None) -> None:
        stems, arrays = index.arrays()
        if not self._save({f"bm25_{name}": arrays[name] for name in _BM25}, folder):
            return
        folder = folder or self.folder
        vocab = pa.table({"stem": pa.array(stems, pa.string())})
        tmp = folder / f".bm25_vocab.{uuid.uuid4().hex}.tmp"
        try:
            with pa.ipc.new_file(str(tmp), vocab.schema) as writer:
                writer.write_table(vocab)
            os.replace(tmp, folder / "bm25_vocab.arrow")  # last: marks the postings complete
        except OSError:
            tmp.unlink(missing_ok=True)
            return
        self._push(folder, ["bm25_vocab.arrow"])

    # -- files ----------------------------------------------------------------------------------

    def _array(self, name: str) -> np.ndarray:
        return np.load(self.folder / f"{name}.npy", mmap_mode="r")

    def _save(self, arrays: dict[str, np.ndarray], folder: Path | None = None) -> bool:
        """Each array to a temporary file, renamed into place in order; False if the folder is gone.
        An array memory-mapped from a file of the tenant's is linked instead of written."""
        folder = folder or self.folder
        if folder is None:
            return False
        try:
            for name, array in arrays.items():
                tmp = folder / f".{name}.{uuid.uuid4().hex}.tmp.npy"
                source = mapped_file(array)
                ours = source is not None and source.parent.parent == self.tenant_dir
                if ours and source.parent != folder:  # an earlier folder's file: linked
                    try:
                        os.link(source, tmp)
                    except OSError:
                        np.save(tmp, np.asarray(array))
                elif ours and source.name.startswith("."):  # written to a temporary file: moved
                    os.replace(source, tmp)
                else:
                    np.save(tmp, np.asarray(array))
                os.replace(tmp, folder / f"{name}.npy")
        except OSError as exc:  # removed meanwhile (a newer fingerprint, or the tenant forgotten)
            log.info("recall index not saved in %s: %s", self.folder, exc)
            return False
        self._push(folder, [f"{name}.npy" for name in arrays])
        return True

    def _push(self, folder: Path, files: list[str]) -> None:
        """Upload files added to the current folder, in order (the last marks the others complete);
        a folder being filled before it is published is uploaded whole by ``publish``."""
        if self.mirror is not None and folder == self.folder:
            self.mirror.push(folder, folder.name, files, last=tuple(files[-1:]))


def _young(path: Path, seconds: float = 3600) -> bool:
    """A temporary folder another process may still be writing."""
    try:
        return time.time() - path.stat().st_mtime < seconds
    except OSError:
        return False
