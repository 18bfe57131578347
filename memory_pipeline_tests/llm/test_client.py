"""Proves: the LLM client retries what a busy endpoint answers (429, 5xx) a bounded number of
times with backoff, honours a 429's Retry-After, and does not retry what another try cannot fix
(a 4xx, a timeout); against a real HTTP server on 127.0.0.1 that answers from a script. A call
ends at its wall-clock deadline even when the endpoint trickles a byte at a time (each read alone
would meet a per-read timeout), a Retry-After past the run's budget is not waited for, and after a
few failures the breaker stops asking the endpoint for the rest of the run."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memory_pipeline.llm.client import LLMClient, LLMError, LLMUnavailable

OK = (200, {}, {"choices": [{"message": {"content": "  a summary  "}}]})


class _Quiet(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _serve(handler: type, state: dict):
    """Serve ``handler`` on a loopback port for one test; ``state["url"]`` is its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    state["url"] = f"http://127.0.0.1:{server.server_address[1]}/v1"
    yield state
    server.shutdown()


@pytest.fixture
def endpoint():
    """Answers each POST with the next (status, headers, body) of ``script``; records arrival times."""
    state = {"script": [], "times": []}

    class Handler(_Quiet):
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

    yield from _serve(Handler, state)


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
    monkeypatch.setenv("MEMORY_PIPELINE_LLM_CALL_DEADLINE_S", "5")
    monkeypatch.setenv("MEMORY_PIPELINE_LLM_RUN_BUDGET_S", "60")
    monkeypatch.setenv("MEMORY_PIPELINE_LLM_MAX_FAILURES", "2")
    client = LLMClient.from_env()
    assert (client.base_url, client.model, client.api_key) == ("http://127.0.0.1:9/v1", "default", "k-123")
    assert (client.timeout, client.run_budget, client.max_failures) == (5.0, 60.0, 2)
    assert LLMClient.from_env() is not client and client.available  # each run gets its own breaker
    assert "k-123" not in repr(__import__("memory_pipeline.config", fromlist=["Settings"]).Settings())


@pytest.fixture
def trickle():
    """Sends a response one byte every 50 ms (2,000 bytes: 100 s in all), status line first;
    records how many bytes it sent before the client hung up."""
    state = {"sent": [], "requests": 0}
    payload = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + b" " * 2000

    class Handler(_Quiet):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            state["requests"] += 1
            sent = 0
            try:
                for byte in payload:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    sent += 1
                    time.sleep(0.05)
            except OSError:
                pass  # the client hung up
            state["sent"].append(sent)

    yield from _serve(Handler, state)


def _wait_for(condition) -> None:
    for _ in range(200):
        if condition():
            return
        time.sleep(0.05)


def test_a_trickling_endpoint_is_cut_at_the_call_deadline(trickle):
    client = LLMClient(trickle["url"], "m", timeout=0.6, attempts=3, backoff=0.01)
    with pytest.raises(LLMError, match=r"too slow \(no answer in 0.6 s\)"):
        client.chat("system", "user", 16)
    _wait_for(lambda: trickle["sent"])
    # Hung up during the first response, long before its 2,000 bytes; a timeout is not retried.
    assert trickle["requests"] == 1 and len(trickle["sent"]) == 1
    assert 0 < trickle["sent"][0] < 2000


def test_the_breaker_stops_asking_after_a_few_failures(endpoint):
    endpoint["script"] = [(500, {}, {})] * 10
    client = LLMClient(endpoint["url"], "m", attempts=1, backoff=0.01, max_failures=2)
    with pytest.raises(LLMError, match=r"HTTP 500 \(after 1 attempts\)$"):
        client.chat("system", "user", 16)
    assert client.available
    with pytest.raises(LLMError, match="the rest of this run is extractive"):
        client.chat("system", "user", 16)
    assert not client.available
    with pytest.raises(LLMUnavailable, match=r"not asked again in this run \(2 failures"):
        client.chat("system", "user", 16)
    assert len(endpoint["times"]) == 2  # the third call never reached the endpoint


def test_a_retry_after_past_the_budget_is_not_waited_for(endpoint):
    endpoint["script"] = [(429, {"Retry-After": "3600"}, {})] * 3
    client = LLMClient(endpoint["url"], "m", attempts=3, backoff=0.01, run_budget=60)
    with pytest.raises(LLMError, match="HTTP 429 asking to wait 3600 s; the rest of this run is extractive"):
        client.chat("system", "user", 16)
    assert len(endpoint["times"]) == 1 and not client.available
    with pytest.raises(LLMUnavailable):
        client.chat("system", "user", 16)
    assert len(endpoint["times"]) == 1


def test_a_retry_after_past_the_call_deadline_fails_the_call_only(endpoint):
    endpoint["script"] = [(429, {"Retry-After": "5"}, {}), OK]
    client = LLMClient(endpoint["url"], "m", timeout=1.0, attempts=3, backoff=0.01)
    with pytest.raises(LLMError, match="HTTP 429 asking to wait 5 s, past the call's deadline"):
        client.chat("system", "user", 16)
    assert client.available
    assert client.chat("system", "user", 16) == "a summary"
    assert len(endpoint["times"]) == 2


def test_a_spent_run_budget_opens_the_breaker(trickle):
    client = LLMClient(trickle["url"], "m", timeout=30, run_budget=0.5)
    with pytest.raises(LLMError, match="too slow"):
        client.chat("system", "user", 16)  # the call's limit is what is left of the run's budget
    assert not client.available
    with pytest.raises(LLMUnavailable, match="the run's 0.5 s for the endpoint are spent"):
        client.chat("system", "user", 16)
    assert trickle["requests"] == 1
