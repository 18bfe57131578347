"""Fixtures of the hardening tests: the leaky workspace after every stage of the pipeline ran, and an
S3 endpoint (moto) for the object-storage tests."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request

import dagster as dg
import pytest

from memory_pipeline_tests.helpers.hardening import BUCKET, build_leaky_workspace, run_everything


@pytest.fixture(scope="session")
def leaky(in_memory):
    """The leaky workspace after every stage ran: (base folder, root, LanceDB URI, results).

    The Dagster instance lives in ``base/dagster``; tests that change anything work on a copy
    (``leaky_copy``).
    """
    base = in_memory / "leaky"
    base.mkdir()
    root, lance_uri = base / "agents", str(base / "lancedb")
    root.mkdir()
    (base / "dagster").mkdir()
    build_leaky_workspace(root)
    with dg.instance_for_test(temp_dir=str(base / "dagster")) as instance:
        results = run_everything(root, lance_uri, instance)
    return base, root, lance_uri, results


@pytest.fixture
def leaky_copy(leaky, in_memory_path):
    """A copy of the leaky workspace's base folder for one test."""
    shutil.copytree(leaky[0], in_memory_path, dirs_exist_ok=True)
    return in_memory_path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def s3(monkeypatch, tmp_path):
    """An S3 endpoint (moto) with an empty bucket; yields its base URL."""
    server = shutil.which("moto_server")
    if server is None:
        pytest.skip("moto_server is not installed (pip install 'moto[server]'): no S3 endpoint to test against")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    with open(tmp_path / "moto.log", "wb") as log:
        proc = subprocess.Popen([server, "-H", "127.0.0.1", "-p", str(port)], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(urllib.request.Request(f"{url}/{BUCKET}", method="PUT"), timeout=2)
                break
            except (urllib.error.URLError, ConnectionError):
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"moto_server did not start: {(tmp_path / 'moto.log').read_text()[-2000:]}")
                time.sleep(0.2)
        for key, value in {
            "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1",
            "AWS_ENDPOINT": url, "AWS_ALLOW_HTTP": "true",
        }.items():
            monkeypatch.setenv(key, value)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)
