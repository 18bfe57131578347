"""Settings for the pipeline and recall, read from the environment (``MEMORY_PIPELINE_*``).

Every default is usable from a fresh clone: the workspace is ``data/agents`` and LanceDB lives in
``data/lancedb``, both relative to the current directory unless set to absolute paths or URIs.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from typing import Annotated, Any, Literal, get_origin

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

ENV_PREFIX = "MEMORY_PIPELINE_"
DEFAULT_INCLUDE = ("MEMORY.md", "memory.md", "memory/**/*.md", "sessions/*/*.jsonl")
DEFAULT_EXCLUDE = ("**/.*", "**/.*/**")


class RecallConfig(BaseModel):
    """Every weight and limit of recall (DESIGN §6); set as JSON in ``MEMORY_PIPELINE_RECALL``."""

    k: int = Field(6, ge=1, description="Results returned.")
    min_score: float = Field(0.35, description="Results scoring below this are dropped.")
    vector_weight: float = Field(0.7, ge=0, description="Weight of the cosine channel.")
    text_weight: float = Field(0.3, ge=0, description="Weight of the BM25 channel.")
    text_norm: str = Field(
        "minmax", description="BM25 to 0..1: 'minmax' (worst hit 0, best 1) or 'max' (score / best)."
    )
    text_full_share: float = Field(
        0.5, ge=0, le=1, description="A best full-text hit scoring less than this share of a row holding "
        "the query's words once (``text_full_words``) counts for its share (0: the best hit is always 1).",
    )
    text_full_words: int = Field(
        4, ge=0, description="How many of the query's rarest words that row holds (0: every word): an answer "
        "holds a question's telling words, not all of a long question's (bench/README.md).",
    )
    half_life_days: float = Field(30.0, gt=0, description="Decay half-life of dated notes.")
    mmr: bool = Field(
        False, description="Reorder the top results by maximal marginal relevance, so a result much like a better "
        "one gives way to a different one.",
    )
    mmr_lambda: float = Field(
        0.7, ge=0, le=1, description="Relevance's weight against unlikeness to the results already picked (1: "
        "relevance alone).",
    )
    source_weights: dict[str, Annotated[float, Field(ge=0)]] = Field(
        {"facts": 0.85}, description="Multiplier of a source's scores in the order of results, by source name (1 "
        "when absent; the minimum score is held to the score before it). Typed memories (facts) rank at 0.85: "
        "a restatement in a few words matches a question more closely than the turn or note it was read "
        "from, which holds the answer in its speaker's words (bench/README.md).",
    )
    user_boost: float = Field(1.2, description="Multiplier for the user's own memory.")
    leader_boost: float = Field(1.0, description="Multiplier for a team leader's memory.")
    candidates: int = Field(50, ge=1, description="Hits each channel contributes before fusion.")
    snippet_chars: int = Field(700, ge=1, description="A result's text is cut to this many characters.")
    focus_chars: int = Field(
        300, ge=0, description="A transcript turn longer than this shows only its run of sentences that "
        "holds the most query words, at most this long (0: whole turns).",
    )
    collapse_overlaps: bool = Field(
        True, description="Drop a result whose lines overlap a better one of the same file."
    )
    context_weight: float = Field(
        0.3, ge=0, description="Weight of the best adjacent window in a window's relevance."
    )
    context_rows: int = Field(1, ge=0, description="Adjacent windows a result carries along.")
    carry_answer: bool = Field(
        True, description="A transcript result whose last turn asks a question also carries the next "
        "turn, which answers it (bench/README.md).",
    )
    context_sources: tuple[str, ...] = Field(
        ("sessions",), description="Sources whose rows are read with their neighbours."
    )
    ann_min_rows: int = Field(
        50_000, ge=0, description="Tenants with this many rows are searched through an IVF index "
        "instead of an exact scan (0: always exact)."
    )
    ann_lists: int | None = Field(None, description="IVF clusters (default sqrt(rows)).")
    ann_nprobe: int = Field(24, ge=1, description="IVF clusters scanned per query.")
    query_threads: int = Field(
        1, ge=0, description="CPU threads the model embeds one query with (0: the process default)."
    )
    speaker_boost: float = Field(
        0.1, ge=0, description="Added to the score (times the share of turns) of transcript turns "
        "spoken by a person the query names.",
    )
    role_boost: float = Field(
        0.03, ge=0, description="Added to the score (times the share of turns) of chat turns of the role a "
        "question asks about: the assistant's for 'what did you suggest', the user's for a question in "
        "the first person (bench/README.md).",
    )
    request_frame: bool = Field(
        False, description="Match a request for advice with its frame ('Can you suggest some', 'Any tips on', "
        "'Do you think it would be a good idea to'); by default only the topic after it is embedded and "
        "searched, since the frame matches every earlier request instead of what the user said about the "
        "topic (bench/README.md).",
    )
    time_boost: float = Field(
        0.05, ge=0, description="Added when a 'when' question meets a chunk that states a time."
    )
    date_boost: float = Field(
        0.15, ge=0, description="Added when a chunk's date falls in a period the query names ('last Friday', "
        "'in May', asked at the query's reference time) (bench/README.md).",
    )
    inject_min_score: float = Field(0.3, description="Auto-inject keeps results from this score.")
    inject_token_budget: int = Field(200, ge=1, description="Tokens auto-inject may add.")
    inject_min_words: int = Field(3, ge=1, description="Meaningful words a message needs.")
    context_token_budget: int = Field(1500, ge=50, description="Tokens the working memory may take.")


class Settings(BaseModel):
    """Deployment settings; each field can be set as ``MEMORY_PIPELINE_<FIELD>`` (any case), a
    nested one (``teams``, ``recall``) as JSON; what the caller passes wins over the environment.

    Read by the model's own validator (``_environment``), as pydantic-settings reads it for these
    fields: importing pydantic-settings cost a one-shot query 0.14 CPU s of its ~1 s."""

    model_config = ConfigDict(extra="ignore", validate_default=True)

    root: str = Field("data/agents", description="Workspace root holding one folder per agent.")
    lancedb_uri: str = Field("data/lancedb", description="Any URI LanceDB accepts.")
    embedder: str = Field(
        "minilm", description="'minilm' (all-MiniLM-L6-v2) or 'hash' (fast, offline, for tests)."
    )
    include: tuple[str, ...] = Field(
        DEFAULT_INCLUDE, description="Which files of a tenant are memory: glob patterns relative to its "
        "folder, as a JSON list.",
    )
    exclude: tuple[str, ...] = Field(
        DEFAULT_EXCLUDE, description="Files matching these patterns are not memory even when included "
        "(a JSON list).",
    )
    embed_batch_size: int = Field(32, description="Texts the embedder encodes per batch.")
    max_file_bytes: int = Field(8_000_000, description="Larger files are recorded, not indexed.")
    chunk_target_chars: int = Field(1000, description="Markdown blocks are packed into chunks up to this size.")
    chunk_max_chars: int = Field(
        1600, description="Only a block longer than this is split (also the longest transcript window)."
    )
    chunk_overlap_chars: int = Field(200, description="Overlap between the pieces of a split block.")
    # One turn per row: recall reads each turn with its best neighbour (RecallConfig.context_*),
    # which beat fixed windows of 2 and 3 turns at the same result length (bench/README.md).
    session_window_turns: int = Field(1, description="Transcript turns per indexed window.")
    session_window_stride: int = Field(1, description="Turns from one window's start to the next.")
    session_idle_minutes: int = Field(
        30, description="A session without a `session.completed` line is complete after this long idle."
    )
    episode_ttl_days: int = Field(90, description="Episodes expire this long after they are made and are then pruned.")
    optimize_cron: str = Field(
        "0 3 * * *", description="When LanceDB tables are compacted and optimized (cron, UTC)."
    )
    prune_cron: str = Field(
        "0 */6 * * *", description="When expired episodes are pruned (cron, UTC)."
    )
    activation_cron: str = Field(
        "30 2 * * *", description="When each tenant's activation is aged from its access log (cron, UTC)."
    )
    automation: Literal["stopped", "running"] = Field(
        "stopped", description="State of the sensors and schedules on an instance that has never "
        "switched them: 'stopped' (turned on in the UI or with `dagster sensor start`) or 'running'.",
    )
    flush_messages: int = Field(
        50, ge=1, description="A live session is flushed each time this many more messages arrive."
    )
    flush_context_tokens: int = Field(
        128_000, ge=1, description="The agent's context size in tokens, for the token threshold of flush."
    )
    flush_context_share: float = Field(
        0.85, gt=0, le=1, description="A live session is also flushed past this share of the context size."
    )
    teams: dict[str, str] = Field(
        default_factory=dict,
        description="Team member agent -> leader agent, as JSON; members read the leader's "
        "memory as a fallback and may not write it.",
    )
    recall: RecallConfig = Field(
        default_factory=RecallConfig, description="Recall's weights and limits, as a JSON object; keys left out keep "
        "their defaults.",
    )
    code_url: str | None = Field(
        None, description="The repository's web address (GitHub or GitLab): the UI links each asset "
        "to its code there; unset: to the local file."
    )
    code_branch: str = Field("main", description="The branch of code_url the links point at.")
    celery_broker: str | None = Field(
        None, description="A Celery broker URL (e.g. amqp://guest:guest@rabbitmq:5672//): the steps of "
        "every run go to dagster-celery workers; unset: each run executes its steps in its own process."
    )
    celery_backend: str = Field(
        "rpc://", description="The Celery result backend the workers report to (e.g. redis://redis:6379/0)."
    )
    llm_base_url: str | None = Field(
        None, description="An OpenAI-compatible endpoint (e.g. http://host:8000/v1) that may write "
        "summaries and dreamed documents; unset: the extractive path only."
    )
    llm_model: str | None = Field(None, description="The model name sent to that endpoint.")
    llm_api_key: SecretStr | None = Field(None, description="Its bearer token (never logged).")
    llm_call_deadline_s: float = Field(
        30.0, gt=0, description="Wall-clock limit of one call to that endpoint, retries and waits included."
    )
    llm_run_budget_s: float = Field(
        600.0, gt=0, description="Wall-clock time one run may spend on that endpoint; past it, the extractive path."
    )
    llm_max_failures: int = Field(
        3, ge=1, description="Failed or rejected answers after which the rest of a run goes extractive."
    )

    @model_validator(mode="before")
    @classmethod
    def _environment(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        found = environment_values(cls)
        for name, value in data.items():  # a nested value given as a dict overrides key by key
            held = found.get(name)
            found[name] = {**held, **value} if isinstance(held, dict) and isinstance(value, dict) else value
        return found


def environment_values(model: type[BaseModel], environ=None) -> dict[str, Any]:
    """The fields of ``model`` set in the environment as ``MEMORY_PIPELINE_<FIELD>`` (the name in
    any case): a nested value (a model, dict, list or tuple) decoded from JSON, any other as written."""
    environ = os.environ if environ is None else environ
    named = {key.upper(): value for key, value in environ.items() if key.upper().startswith(ENV_PREFIX)}
    values: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        variable = ENV_PREFIX + name.upper()
        if variable not in named:
            continue
        raw = named[variable]
        if _nested(field.annotation):
            try:
                values[name] = json.loads(raw)
            except ValueError as exc:
                raise ValueError(f"{variable} is not valid JSON ({exc}): set it as a JSON object") from None
        else:
            values[name] = raw
    return values


def _nested(annotation: Any) -> bool:
    """Whether a field's type is read from JSON: a model, or a dict, list or tuple."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return True
    return annotation in (dict, list, tuple) or get_origin(annotation) in (dict, list, tuple)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
