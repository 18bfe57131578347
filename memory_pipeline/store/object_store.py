"""Files beside a LanceDB database on object storage, through Arrow's filesystems.

LanceDB reads its object-store settings from the environment (``AWS_ENDPOINT``,
``AWS_ALLOW_HTTP``, ``AWS_REGION``, the credentials; docs/deploy.md section 5); the same
variables open the same bucket here, so what LanceDB writes and the files kept beside its tables
share one store and one configuration. Everything here answers for object storage only: a local
folder is plain ``pathlib``.

Objects appear whole or not at all (a PUT is atomic), so a set of files is made complete by
writing the one that marks it complete last, as on a local folder.
"""

from __future__ import annotations

import logging
import os
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

from pyarrow import ArrowException
from pyarrow import fs as pafs

log = logging.getLogger(__name__)

# Large index files upload and download in parallel streams; more than a few only queue on 2 cores.
_THREADS = 4
# Arrow reads an object in ranged GETs of this size: at its default (1 MB) a 150 MB file took
# 32-36 s from moto's S3 server, which answers each range at the cost of the whole object, and
# 1.5 s in 64 MB ranges (one plain GET: 0.3 s); fewer, larger requests cost a real store less too.
_CHUNK = 64 << 20


def filesystem(uri: str) -> tuple[pafs.FileSystem, str] | None:
    """The filesystem and base path of a database URI on object storage; None for a local folder
    (and for a store Arrow cannot open: its files then stay on this machine)."""
    if "://" not in str(uri):
        return None
    scheme, _, rest = str(uri).partition("://")
    store = _filesystem(scheme.lower(), _env_key())
    return None if store is None else (store, rest.strip("/"))


def _env_key() -> tuple[str | None, ...]:
    """The variables the filesystem is built from: a change (another endpoint) builds another."""
    names = ("AWS_ENDPOINT", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_DEFAULT_REGION",
             "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
    return tuple(os.environ.get(name) for name in names)


@lru_cache(maxsize=8)
def _filesystem(scheme: str, env: tuple[str | None, ...]) -> pafs.FileSystem | None:
    try:
        return _open(scheme, env)
    except (OSError, ValueError, ArrowException) as exc:  # a store Arrow cannot open (or not configured)
        log.warning("files beside %s:// databases cannot be reached through Arrow (%s): kept on this machine only",
                    scheme, exc)
        return None


def _open(scheme: str, env: tuple[str | None, ...]) -> pafs.FileSystem:
    if scheme not in ("s3", "s3a"):
        return pafs.FileSystem.from_uri(f"{scheme}://bucket")[0]
    endpoint, endpoint_url, endpoint_s3, region, default_region, key, secret, token = env
    endpoint = endpoint or endpoint_s3 or endpoint_url
    options: dict = {"region": region or default_region or "us-east-1"}
    if key and secret:
        options.update(access_key=key, secret_key=secret, session_token=token)
    if endpoint:
        scheme_part, _, host = endpoint.partition("://")
        options.update(endpoint_override=host or endpoint, scheme=scheme_part if host else "https")
        # An S3-compatible server (MinIO, moto) names buckets in the path, as LanceDB does.
        options["force_virtual_addressing"] = False
    return pafs.S3FileSystem(**options)


def listing(store: pafs.FileSystem, path: str) -> list[pafs.FileInfo]:
    """The entries directly under ``path`` (none if it does not exist)."""
    return store.get_file_info(pafs.FileSelector(path, allow_not_found=True, recursive=False))


def folders(store: pafs.FileSystem, path: str) -> list[str]:
    """The names of the folders directly under ``path``."""
    return sorted(info.base_name for info in listing(store, path) if info.type == pafs.FileType.Directory)


def exists(store: pafs.FileSystem, path: str) -> bool:
    return store.get_file_info(path).type != pafs.FileType.NotFound


def read_bytes(store: pafs.FileSystem, path: str) -> bytes | None:
    try:
        with store.open_input_stream(path) as stream:
            return stream.read()
    except (OSError, FileNotFoundError):
        return None


def upload(store: pafs.FileSystem, local: Path, remote: str, names: list[str], last: tuple[str, ...] = ()) -> None:
    """Copy ``local/<name>`` to ``remote/<name>`` for each name, in parallel, then each of ``last``
    in order (the files that mark the others complete)."""
    local_fs = pafs.LocalFileSystem()

    def put(name: str) -> None:
        pafs.copy_files(str(local / name), f"{remote}/{name}", source_filesystem=local_fs,
                        destination_filesystem=store, chunk_size=_CHUNK)

    with ThreadPoolExecutor(_THREADS) as pool:
        list(pool.map(put, [n for n in names if n not in last]))
    for name in last:
        if name in names:
            put(name)


def download(store: pafs.FileSystem, remote: str, local: Path) -> None:
    """Copy every file directly under ``remote`` into the folder ``local`` (made if missing)."""
    local.mkdir(parents=True, exist_ok=True)
    files = [info for info in listing(store, remote) if info.type == pafs.FileType.File]
    local_fs = pafs.LocalFileSystem()

    def get(info: pafs.FileInfo) -> None:
        pafs.copy_files(info.path, str(local / info.base_name), source_filesystem=store,
                        destination_filesystem=local_fs, chunk_size=_CHUNK)

    with ThreadPoolExecutor(_THREADS) as pool:
        list(pool.map(get, files))


def delete(store: pafs.FileSystem, path: str) -> bool:
    """Remove the folder (every object under the prefix) or file at ``path``; whether one was there."""
    kind = store.get_file_info(path).type
    if kind == pafs.FileType.Directory:
        store.delete_dir(path)
    elif kind == pafs.FileType.File:
        store.delete_file(path)
    return kind != pafs.FileType.NotFound


class Mirror:
    """The copy on object storage of a local folder's sub-folders (``<path>/<name>/<file>``).

    A failed request is logged and answered as "not there": what is mirrored is derived data, so
    the caller rebuilds it rather than fail.
    """

    def __init__(self, store: pafs.FileSystem, path: str):
        self.store, self.path = store, path.rstrip("/")

    def _guard(self, what: str, default, call, *args):
        try:
            return call(*args)
        except OSError as exc:
            log.warning("object storage: %s under %s failed (%s)", what, self.path, exc)
            return default

    def folders(self) -> list[str]:
        return self._guard("listing", [], folders, self.store, self.path)

    def has(self, relative: str) -> bool:
        return self._guard("a lookup", False, exists, self.store, f"{self.path}/{relative}")

    def read(self, relative: str) -> bytes | None:
        return self._guard("a read", None, read_bytes, self.store, f"{self.path}/{relative}")

    def push(self, local: Path, name: str, files: list[str], last: tuple[str, ...] = ()) -> bool:
        """Upload ``files`` of the folder ``local`` as sub-folder ``name``, those in ``last`` last."""
        return self._guard("an upload", False, lambda: upload(self.store, local, f"{self.path}/{name}", files, last)
                           or True)

    def fetch(self, name: str, local: Path) -> bool:
        """Download sub-folder ``name`` into the folder ``local``."""
        return self._guard("a download", False, lambda: download(self.store, f"{self.path}/{name}", local) or True)

    def remove(self, relative: str = "") -> bool:
        """Delete a sub-folder or file (the whole mirror when ``relative`` is empty)."""
        path = f"{self.path}/{relative}".rstrip("/")
        return self._guard("a delete", False, delete, self.store, path)
