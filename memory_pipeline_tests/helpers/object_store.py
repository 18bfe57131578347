"""An S3 API on a loopback port for the object-storage tests: moto's server as a subprocess.

A subprocess rather than moto in the test's own process: the run workers of the multi-worker
tests are other processes, and the server's request handling then never competes with the test
for its interpreter.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

BUCKET = "memory"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def s3_env(url: str) -> dict[str, str]:
    """The variables LanceDB (and ``store/object_store.py``) open the bucket of ``url`` with."""
    return {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1",
            "AWS_ENDPOINT": url, "AWS_ALLOW_HTTP": "true"}


@contextmanager
def moto_s3(logs: Path, bucket: str = BUCKET):
    """moto's S3 server with an empty ``bucket``; yields its base URL. Skips without moto."""
    server = Path(sys.executable).with_name("moto_server")
    server = str(server) if server.exists() else shutil.which("moto_server")
    if server is None:
        pytest.skip("moto_server is not installed (pip install -e '.[test]' installs moto): no S3 API to test against")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    with open(logs / "moto.log", "wb") as log:
        proc = subprocess.Popen([server, "-H", "127.0.0.1", "-p", str(port)], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(urllib.request.Request(f"{url}/{bucket}", method="PUT"), timeout=2)
                break
            except (urllib.error.URLError, ConnectionError):
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"moto_server did not start: {(logs / 'moto.log').read_text()[-2000:]}")
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)
