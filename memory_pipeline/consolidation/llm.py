"""An optional OpenAI-compatible chat endpoint that may write summaries and dreamed documents.

Configured from the environment: ``MEMORY_PIPELINE_LLM_BASE_URL`` (e.g. ``http://host:8000/v1``),
``MEMORY_PIPELINE_LLM_MODEL`` and ``MEMORY_PIPELINE_LLM_API_KEY``. Without a base URL nothing is
called. Every failure (timeout, HTTP error, malformed or empty answer) raises ``LLMError`` and the
caller falls back to the extractive path, recording which path produced the output.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from dataclasses import dataclass

ENV_BASE_URL = "MEMORY_PIPELINE_LLM_BASE_URL"
ENV_MODEL = "MEMORY_PIPELINE_LLM_MODEL"
ENV_API_KEY = "MEMORY_PIPELINE_LLM_API_KEY"
TIMEOUT_S = 30.0
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


@dataclass(frozen=True)
class LLMClient:
    base_url: str
    model: str
    api_key: str | None = None
    timeout: float = TIMEOUT_S

    @classmethod
    def from_env(cls) -> "LLMClient | None":
        base = os.environ.get(ENV_BASE_URL, "").strip()
        if not base:
            return None
        return cls(base.rstrip("/"), os.environ.get(ENV_MODEL, "").strip() or "default", os.environ.get(ENV_API_KEY) or None)

    def chat(self, system: str, user: str, max_tokens: int) -> str:
        body = json.dumps(
            {
                "model": self.model,
                "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
                "max_tokens": max_tokens,
                "temperature": 0,
            }
        ).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(f"{self.base_url}/chat/completions", data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                payload = json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            raise LLMError(f"{self.base_url} answered HTTP {exc.code}") from exc
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            raise LLMError(f"{self.base_url} unreachable or too slow ({exc})") from exc
        except ValueError as exc:
            raise LLMError(f"{self.base_url} returned something that is not JSON ({exc})") from exc
        try:
            content = payload["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise LLMError(f"{self.base_url} returned no choices[0].message.content") from exc
        if not isinstance(content, str) or not content.strip():
            raise LLMError(f"{self.base_url} returned an empty answer")
        return content.strip()
