"""An optional OpenAI-compatible chat endpoint that may write summaries and dreamed documents.

Configured from the environment (``Settings``): ``MEMORY_PIPELINE_LLM_BASE_URL`` (e.g.
``http://host:8000/v1``), ``MEMORY_PIPELINE_LLM_MODEL`` and ``MEMORY_PIPELINE_LLM_API_KEY``.
Without a base URL nothing is called. Requests go through httpx; a rate limit (429) or a server
error (5xx) or a refused connection is retried a bounded number of times with exponential backoff
and jitter (a 429's ``Retry-After`` is honoured up to a bound), because a busy endpoint usually
answers a moment later. A timeout is not retried: at 30 s a call, retries would hold a
consolidation run for minutes. Every failure that remains (HTTP error, malformed or empty answer)
raises ``LLMError`` and the caller falls back to the extractive path, recording which path
produced the output.
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

ENV_BASE_URL = "MEMORY_PIPELINE_LLM_BASE_URL"
ENV_MODEL = "MEMORY_PIPELINE_LLM_MODEL"
ENV_API_KEY = "MEMORY_PIPELINE_LLM_API_KEY"
TIMEOUT_S = 30.0
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


class _Retryable(Exception):
    """A 429, a 5xx or a refused connection: worth another try after a wait."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True)
class LLMClient:
    base_url: str
    model: str
    api_key: str | None = None
    timeout: float = TIMEOUT_S
    attempts: int = ATTEMPTS
    backoff: float = BACKOFF_S

    @classmethod
    def from_env(cls) -> "LLMClient | None":
        from memory_pipeline.config import Settings

        settings = Settings()  # read now, not cached: the endpoint may be set after start-up
        base = (settings.llm_base_url or "").strip()
        if not base:
            return None
        key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
        model = (settings.llm_model or "").strip() or "default"
        return cls(base.rstrip("/"), model, key or None, attempts=ATTEMPTS, backoff=BACKOFF_S)

    def chat(self, system: str, user: str, max_tokens: int) -> str:
        body = {
            "model": self.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "max_tokens": max_tokens,
            "temperature": 0,
        }
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        retrying = Retrying(
            stop=stop_after_attempt(max(1, self.attempts)),
            wait=self._wait,
            retry=retry_if_exception(lambda exc: isinstance(exc, _Retryable)),
            reraise=True,
        )
        try:
            with httpx.Client(timeout=self.timeout) as client:
                payload = retrying(self._post, client, body, headers)
        except _Retryable as exc:
            raise LLMError(f"{exc} (after {self.attempts} attempts)") from exc
        try:
            content = payload["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise LLMError(f"{self.base_url} returned no choices[0].message.content") from exc
        if not isinstance(content, str) or not content.strip():
            raise LLMError(f"{self.base_url} returned an empty answer")
        return content.strip()

    def _post(self, client: httpx.Client, body: dict, headers: dict) -> object:
        try:
            response = client.post(f"{self.base_url}/chat/completions", json=body, headers=headers)
        except httpx.TimeoutException as exc:
            raise LLMError(f"{self.base_url} too slow (no answer in {self.timeout:g} s)") from exc
        except httpx.TransportError as exc:
            raise _Retryable(f"{self.base_url} unreachable ({type(exc).__name__})") from exc
        if response.status_code == 429 or response.status_code >= 500:
            raise _Retryable(f"{self.base_url} answered HTTP {response.status_code}", _retry_after(response))
        if response.status_code >= 400:
            raise LLMError(f"{self.base_url} answered HTTP {response.status_code}")
        try:
            return response.json()
        except ValueError as exc:
            raise LLMError(f"{self.base_url} returned something that is not JSON") from exc

    def _wait(self, state: RetryCallState) -> float:
        backoff = wait_exponential_jitter(initial=self.backoff, max=MAX_WAIT_S, jitter=self.backoff)(state)
        error = state.outcome.exception() if state.outcome else None
        asked = getattr(error, "retry_after", None)
        return min(max(backoff, asked or 0.0), MAX_WAIT_S)


def _retry_after(response: httpx.Response) -> float | None:
    """A Retry-After given in seconds (the date form is rare from these endpoints and ignored)."""
    try:
        return max(0.0, float(response.headers.get("Retry-After", "")))
    except ValueError:
        return None
