"""An optional OpenAI-compatible chat endpoint that may write summaries and dreamed documents.

Configured from the environment (``Settings``): ``MEMORY_PIPELINE_LLM_BASE_URL`` (e.g.
``http://host:8000/v1``), ``MEMORY_PIPELINE_LLM_MODEL`` and ``MEMORY_PIPELINE_LLM_API_KEY``.
Without a base URL nothing is called. Requests go through httpx; a rate limit (429) or a server
error (5xx) or a refused connection is retried a bounded number of times with exponential backoff
and jitter (a 429's ``Retry-After`` is honoured when it fits in the call's time), because a busy
endpoint usually answers a moment later. Every failure that remains (HTTP error, malformed or
empty answer, no answer in time) raises ``LLMError`` and the caller falls back to the extractive
path, recording which path produced the output.

Three limits keep a misbehaving endpoint from holding a run:

- a wall-clock deadline per call (``call_deadline``, retries and waits included). httpx's timeouts
  bound each socket operation, so an endpoint that trickles a byte every few seconds would never
  trip them: a timer shuts the call's sockets down when the deadline passes, which ends a blocked
  read at once;
- a wall-clock budget per run (``run_budget``, one client serves one run), and a ``Retry-After``
  longer than what is left of it is not waited for;
- a circuit breaker: after ``max_failures`` failed or rejected answers (``record_failure``), or
  once the budget is spent, the client is ``available`` no more and the rest of the run is
  extractive. The breaker opening is logged once.
"""

from __future__ import annotations

import logging
import random
import socket
import threading
import time
from dataclasses import dataclass, field

import httpx

log = logging.getLogger(__name__)

ENV_BASE_URL = "MEMORY_PIPELINE_LLM_BASE_URL"
ENV_MODEL = "MEMORY_PIPELINE_LLM_MODEL"
ENV_API_KEY = "MEMORY_PIPELINE_LLM_API_KEY"
TIMEOUT_S = 30.0  # wall clock of one call
RUN_BUDGET_S = 600.0
MAX_FAILURES = 3
ATTEMPTS = 3
BACKOFF_S = 0.25  # first wait; doubled per retry, with jitter, at most MAX_WAIT_S
MAX_WAIT_S = 8.0
SUMMARY_MAX_TOKENS = 1024
DREAMING_MAX_TOKENS = 4096

SUMMARY_PROMPT = (
    "You summarize a conversation between a user and an assistant for the assistant's long-term "
    "memory. Write at most 8 plain sentences with the durable facts: who, what was decided, "
    "preferences, dates, open items. The first sentence must stand alone as a one-line abstract. "
    "No preamble, no Markdown."
)


class LLMError(RuntimeError):
    """The endpoint could not produce a usable answer; the extractive path runs instead."""


class LLMUnavailable(LLMError):
    """The breaker is open: the endpoint is not asked again in this run."""


class _Retryable(Exception):
    """A 429, a 5xx or a refused connection: worth another try after a wait."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


@dataclass
class _RunState:
    """What one run has spent on the endpoint, and whether it still asks it."""

    started: float | None = None
    failures: int = 0
    open_reason: str | None = None


class _Deadline:
    """Shuts down the sockets of a call when its wall-clock deadline passes.

    The sockets come from httpcore's documented ``trace`` extension (the network stream of each
    new connection); ``shutdown`` makes a read blocked in another thread return at once.
    """

    def __init__(self, seconds: float):
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(0.0, seconds), self._expire)
        self._timer.daemon = True

    def __enter__(self) -> "_Deadline":
        self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self._timer.cancel()

    def trace(self, event: str, info: dict) -> None:
        if event != "connection.connect_tcp.complete":
            return
        sock = info["return_value"].get_extra_info("socket")
        with self._lock:
            self._sockets.append(sock)
            if self.expired:
                _shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                _shut(sock)


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed


@dataclass(frozen=True)
class LLMClient:
    base_url: str
    model: str
    api_key: str | None = None
    timeout: float = TIMEOUT_S  # wall clock of one call, retries and waits included
    attempts: int = ATTEMPTS
    backoff: float = BACKOFF_S
    run_budget: float = RUN_BUDGET_S
    max_failures: int = MAX_FAILURES
    _run: _RunState = field(default_factory=_RunState, compare=False, repr=False)

    @classmethod
    def from_env(cls) -> "LLMClient | None":
        """A client for one run, or None when no endpoint is configured."""
        from memory_pipeline.config import Settings

        settings = Settings()  # read now, not cached: the endpoint may be set after start-up
        base = (settings.llm_base_url or "").strip()
        if not base:
            return None
        key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
        model = (settings.llm_model or "").strip() or "default"
        return cls(
            base.rstrip("/"), model, key or None, timeout=settings.llm_call_deadline_s, attempts=ATTEMPTS,
            backoff=BACKOFF_S, run_budget=settings.llm_run_budget_s, max_failures=settings.llm_max_failures,
        )

    @property
    def available(self) -> bool:
        """False once the breaker is open or the run's budget is spent."""
        if self._run.open_reason is None and self._remaining_budget() <= 0:
            self._open(f"the run's {self.run_budget:g} s for the endpoint are spent")
        return self._run.open_reason is None

    def record_failure(self, reason: str) -> None:
        """Count a failed or rejected answer; the breaker opens at ``max_failures``."""
        self._run.failures += 1
        if self._run.failures >= self.max_failures and self._run.open_reason is None:
            self._open(f"{self._run.failures} failures, the last: {reason}")

    def chat(self, system: str, user: str, max_tokens: int) -> str:
        if not self.available:
            raise LLMUnavailable(f"{self.base_url} is not asked again in this run ({self._run.open_reason})")
        if self._run.started is None:
            self._run.started = time.monotonic()
        try:
            return self._chat(system, user, max_tokens)
        except LLMError as exc:
            self.record_failure(str(exc))
            if not self.available:
                raise LLMError(f"{exc}; the rest of this run is extractive") from exc
            raise

    def _chat(self, system: str, user: str, max_tokens: int) -> str:
        body = {
            "model": self.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "max_tokens": max_tokens,
            "temperature": 0,
        }
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        limit = min(self.timeout, self._remaining_budget())
        ends = time.monotonic() + limit
        with _Deadline(limit) as deadline, httpx.Client(timeout=limit) as client:
            payload = self._with_retries(client, body, headers, deadline, ends)
        try:
            content = payload["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise LLMError(f"{self.base_url} returned no choices[0].message.content") from exc
        if not isinstance(content, str) or not content.strip():
            raise LLMError(f"{self.base_url} returned an empty answer")
        return content.strip()

    def _with_retries(self, client: httpx.Client, body: dict, headers: dict, deadline: _Deadline, ends: float) -> object:
        attempts = max(1, self.attempts)
        for attempt in range(1, attempts + 1):
            try:
                return self._post(client, body, headers, deadline)
            except _Retryable as exc:
                if attempt == attempts:
                    raise LLMError(f"{exc} (after {attempts} attempts)") from exc
                asked = exc.retry_after or 0.0
                if asked > self._remaining_budget():
                    self._open(f"{exc} with Retry-After {asked:g} s, past the run's budget")
                    raise LLMError(f"{exc} asking to wait {asked:g} s") from exc
                wait = max(self._backoff(attempt), asked)
                if asked > MAX_WAIT_S or time.monotonic() + wait >= ends:
                    raise LLMError(f"{exc} asking to wait {wait:g} s, past the call's deadline") from exc
                time.sleep(wait)
        raise AssertionError("unreachable")

    def _post(self, client: httpx.Client, body: dict, headers: dict, deadline: _Deadline) -> object:
        too_slow = f"{self.base_url} too slow (no answer in {self.timeout:g} s)"
        try:
            response = client.post(
                f"{self.base_url}/chat/completions", json=body, headers=headers, extensions={"trace": deadline.trace}
            )
        except httpx.TimeoutException as exc:
            raise LLMError(too_slow) from exc
        except httpx.TransportError as exc:
            if deadline.expired:
                raise LLMError(too_slow) from exc
            raise _Retryable(f"{self.base_url} unreachable ({type(exc).__name__})") from exc
        if response.status_code == 429 or response.status_code >= 500:
            raise _Retryable(f"{self.base_url} answered HTTP {response.status_code}", _retry_after(response))
        if response.status_code >= 400:
            raise LLMError(f"{self.base_url} answered HTTP {response.status_code}")
        try:
            return response.json()
        except ValueError as exc:
            raise LLMError(f"{self.base_url} returned something that is not JSON") from exc

    def _backoff(self, attempt: int) -> float:
        return min(self.backoff * 2 ** (attempt - 1) + random.uniform(0, self.backoff), MAX_WAIT_S)

    def _remaining_budget(self) -> float:
        if self._run.started is None:
            return self.run_budget
        return self.run_budget - (time.monotonic() - self._run.started)

    def _open(self, reason: str) -> None:
        self._run.open_reason = reason
        log.warning("LLM endpoint %s not asked again in this run, extractive path from now: %s", self.base_url, reason)


def _retry_after(response: httpx.Response) -> float | None:
    """A Retry-After given in seconds (the date form is rare from these endpoints and ignored)."""
    try:
        return max(0.0, float(response.headers.get("Retry-After", "")))
    except ValueError:
        return None
