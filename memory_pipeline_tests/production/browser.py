"""Headless Chromium driven over the DevTools protocol: open a page, wait for text, screenshot.

A few dozen lines instead of a browser-automation dependency: Chromium comes from Debian
(``apt-get install chromium``) and the websocket client from the webserver's own dependencies.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import requests

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome")
FLAGS = (
    "--headless",
    "--no-sandbox",  # the tests may run as root in a container
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
)


def find_chromium() -> str | None:
    for candidate in CHROMIUM_CANDIDATES:
        found = shutil.which(candidate)
        if found:
            return found
    return None


class Browser:
    """One headless Chromium with one page; use as a context manager (the process is always ended)."""

    def __init__(self, executable: str, profile: Path, width: int = 1600, height: int = 1000, timeout: float = 30):
        self.profile = profile
        self.log = profile.with_suffix(".log")
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                [executable, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0",
                 f"--window-size={width},{height}", "about:blank"],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            )
        self._ids = itertools.count(1)
        try:
            self.ws = self._connect(timeout)
        except BaseException:
            self.close()
            raise

    def _connect(self, timeout: float):
        from websockets.sync.client import connect

        port_file = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while not port_file.exists() or not port_file.read_text().strip():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"Chromium did not start: {self.log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.2)
        port = port_file.read_text().split()[0]
        pages = [t for t in requests.get(f"http://127.0.0.1:{port}/json/list", timeout=10).json() if t["type"] == "page"]
        return connect(pages[0]["webSocketDebuggerUrl"], max_size=64 * 2**20, open_timeout=timeout)

    def send(self, method: str, timeout: float = 30, **params) -> dict:
        """Calls a DevTools method and returns its result (events arriving meanwhile are dropped)."""
        call_id = next(self._ids)
        self.ws.send(json.dumps({"id": call_id, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while True:
            message = json.loads(self.ws.recv(timeout=max(0.1, deadline - time.monotonic())))
            if message.get("id") == call_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def navigate(self, url: str) -> None:
        self.send("Page.enable")
        self.send("Page.navigate", url=url)

    def text(self) -> str:
        result = self.send("Runtime.evaluate", expression="document.body ? document.body.innerText : ''", returnByValue=True)
        return result.get("result", {}).get("value", "")

    def wait_for_text(self, needles: list[str], timeout: float) -> str:
        """Waits until the page shows every needle; returns the page text, or raises with what is missing."""
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = self.text()
            if all(n in text for n in needles):
                return text
            time.sleep(1)
        missing = [n for n in needles if n not in text]
        raise AssertionError(f"after {timeout:.0f}s the page lacks {missing}; it shows:\n{text[:2000]}")

    def settle(self, busy: list[str], timeout: float) -> bool:
        """Waits (best effort) until none of the ``busy`` markers is shown, e.g. "Loading"."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.text()
            if not any(marker in text for marker in busy):
                return True
            time.sleep(0.5)
        return False

    def screenshot(self, path: Path) -> Path:
        data = self.send("Page.captureScreenshot", format="png")["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        try:
            if getattr(self, "ws", None) is not None:
                self.ws.close()
        finally:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(10)
                except subprocess.TimeoutExpired:
                    pass
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)  # renderer and helper processes too
            except ProcessLookupError:
                pass
            if self.proc.poll() is None:
                self.proc.wait(5)

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
