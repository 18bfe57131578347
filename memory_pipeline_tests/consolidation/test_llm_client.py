"""Proves: the LLM client retries what a busy endpoint answers (429, 5xx) a bounded number of
times with backoff, honours a 429's Retry-After, and does not retry what another try cannot fix
(a 4xx, a timeout); against a real HTTP server on 127.0.0.1 that answers from a script."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memory_pipeline.consolidation.llm import LLMClient, LLMError

OK = (200, {}, {"choices": [{"message": {"content": "  a summary  "}}]})


@pytest.fixture
def endpoint():
    """Answers each POST with the next (status, headers, body) of ``script``; records arrival times."""
    state = {"script": [], "times": []}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            state["times"].append(time.monotonic())
            status, headers, body = state["script"].pop(0) if state["script"] else OK
            payload = json.dumps(body).encode()
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    state["url"] = f"http://127.0.0.1:{server.server_address[1]}/v1"
    yield state
    server.shutdown()


def test_busy_answers_are_retried_then_succeed(endpoint):
    endpoint["script"] = [(429, {"Retry-After": "0.3"}, {}), (503, {}, {}), OK]
    client = LLMClient(endpoint["url"], "m", attempts=3, backoff=0.01)
    assert client.chat("system", "user", 16) == "a summary"
    first, second, third = endpoint["times"]
    assert second - first >= 0.3  # the Retry-After, not the 0.01 s backoff
    assert third - second < 0.3


def test_retries_are_bounded(endpoint):
    endpoint["script"] = [(500, {}, {})] * 5
    with pytest.raises(LLMError, match=r"HTTP 500 \(after 3 attempts\)"):
        LLMClient(endpoint["url"], "m", attempts=3, backoff=0.01).chat("system", "user", 16)
    assert len(endpoint["times"]) == 3


def test_a_client_error_is_not_retried(endpoint):
    endpoint["script"] = [(401, {}, {"error": "bad key"}), OK]
    with pytest.raises(LLMError, match="HTTP 401"):
        LLMClient(endpoint["url"], "m", attempts=3, backoff=0.01).chat("system", "user", 16)
    assert len(endpoint["times"]) == 1


def test_settings_configure_the_client(monkeypatch):
    monkeypatch.delenv("MEMORY_PIPELINE_LLM_BASE_URL", raising=False)
    assert LLMClient.from_env() is None
    monkeypatch.setenv("MEMORY_PIPELINE_LLM_BASE_URL", "http://127.0.0.1:9/v1/")
    monkeypatch.setenv("MEMORY_PIPELINE_LLM_API_KEY", "k-123")
    client = LLMClient.from_env()
    assert (client.base_url, client.model, client.api_key) == ("http://127.0.0.1:9/v1", "default", "k-123")
    assert "k-123" not in repr(__import__("memory_pipeline.config", fromlist=["Settings"]).Settings())
