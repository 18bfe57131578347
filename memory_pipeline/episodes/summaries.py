"""Episodes (L1): one row per completed session, summarized, scrubbed and ready to embed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np

from memory_pipeline.episodes.sessions import Session
from memory_pipeline.llm.client import SUMMARY_MAX_TOKENS, SUMMARY_PROMPT, LLMClient, LLMError
from memory_pipeline.llm.output import rejection
from memory_pipeline.store.base import stable_id
from memory_pipeline.text.scrub import scrub_secrets
from memory_pipeline.text.summarize import Summary, shorten, split_sentences, summarize_turns
from memory_pipeline.text.turns import Turn

LLM_INPUT_CHARS = 24_000


@dataclass
class EpisodeDraft:
    """An episode row before its vector, and how it was made."""

    row: dict
    turns: tuple[Turn, ...]  # scrubbed, for the graph extraction
    compactions: tuple[tuple[int, str, datetime | None], ...]
    secrets: Counter = field(default_factory=Counter)
    llm_error: str | None = None

    @property
    def embed_text(self) -> str:
        return self.row["summary"]


def episode_id(tenant_key: str, source_id: str) -> str:
    return stable_id("episode", tenant_key, source_id)


def scrubbed_session(session: Session) -> tuple[tuple[Turn, ...], tuple, Counter]:
    """The session's turns and compactions (``parse_transcript`` scrubbed them) and the number
    of secrets redacted from them, by type."""
    transcript = session.transcript
    return transcript.turns, transcript.compactions, Counter(transcript.secrets)


def last_line(session: Session) -> int | None:
    """The last transcript line an episode of the session covers (None: nothing to summarize)."""
    lines = [t.line for t in session.transcript.turns] + [c[0] for c in session.transcript.compactions]
    return max(lines, default=None)


def llm_summary(
    client: LLMClient, turns: Sequence[Turn], compactions: Sequence, topics: list[str], user: str = ""
) -> Summary:
    """The endpoint's summary of the (scrubbed) transcript, itself scrubbed and checked: an answer
    that carries markup, addresses a model or says what the transcript does not raises LLMError
    (and counts as a failure of the run), so the extractive summary stands in."""
    transcript = "\n".join(f"{t.role}: {t.content}" for t in turns)
    if compactions:
        transcript = f"Earlier summary: {compactions[-1][1]}\n" + transcript
    sent = transcript[-LLM_INPUT_CHARS:]
    text = client.chat(SUMMARY_PROMPT, sent, SUMMARY_MAX_TOKENS)
    text = scrub_secrets(" ".join(text.split())).text
    if (why := rejection(text, sent, known=[user, *topics])) is not None:
        client.record_failure(why)
        raise LLMError(f"answer rejected: {why}" + ("" if client.available else "; the rest of this run is extractive"))
    first = split_sentences(text)
    return Summary(text, shorten(first[0] if first else text), topics, "llm")


def build_episode(
    session: Session, tenant_key: str, now: datetime, ttl: timedelta, model: str, llm: LLMClient | None = None,
    nlp=None,
) -> EpisodeDraft | None:
    """The episode of a completed session, or None when the session has nothing to summarize;
    ``nlp`` parses its turns."""
    turns, compactions, secrets = scrubbed_session(session)
    if not turns and not compactions:
        return None
    summary = summarize_turns(turns, compactions, session.file.tenant.user_id, nlp)
    llm_error = None
    llm_model = None
    if llm is not None and llm.available:  # once the breaker is open, no more failures to report
        try:
            summary = llm_summary(llm, turns, compactions, summary.key_topics, session.file.tenant.user_id)
            llm_model = llm.model
        except LLMError as exc:
            llm_error = str(exc)
    lines = [t.line for t in turns] + [c[0] for c in compactions]  # last_line(session): the same turns
    tenant = session.file.tenant
    row = {
        "id": episode_id(tenant_key, session.source_id),
        "tenant": tenant_key,
        "agent_id": tenant.agent_id,
        "user_id": tenant.user_id,
        "path": session.file.path,
        "start_line": min(lines),
        "end_line": max(lines),
        "turn_ids": [t.turn_id for t in turns if t.turn_id],
        "summary": summary.summary,
        "l0_abstract": summary.l0_abstract,
        "key_topics": summary.key_topics,
        "source_id": session.source_id,
        "session_id": session.file.session_id,
        "day": session.day,
        "created_at": now,
        "completed_at": session.completed_at,
        "completed_by": session.completed_by,
        "expires_at": now + ttl,
        "promoted_at": None,
        "produced_by": summary.produced_by,
        "llm_model": llm_model,
        "model": model,
        "vector": None,
        "graph_pending": True,
    }
    return EpisodeDraft(row, turns, compactions, secrets, llm_error)


def attach_vectors(drafts: Sequence[EpisodeDraft], vectors: np.ndarray) -> list[dict]:
    rows = []
    for draft, vector in zip(drafts, vectors, strict=True):
        rows.append({**draft.row, "vector": vector.astype(np.float32).tolist()})
    return rows
