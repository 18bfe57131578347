"""Store, update, forget and skip: the four things an agent or an operator does to a memory.

Each operation writes one row to the append-only audit log. Writes are refused for a team member
agent, whose memory belongs to its leader (DESIGN §6). Forgetting deletes the row and then purges
the table (compaction, index rebuild, old versions removed) so the text is gone from disk.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import datetime

from memory_pipeline.embedding import Embedder
from memory_pipeline.memories.store import (
    INGESTION_SOURCES,
    MEMORY_TYPES,
    TypedMemoryStore,
    content_hash,
    memory_id,
    now_utc,
)
from memory_pipeline.recall.scope import READ_ONLY_MESSAGE, ReadOnlyError  # noqa: F401 - their home is the scope
from memory_pipeline.store.base import commit_lock
from memory_pipeline.tenancy import Tenant

MAX_CONTENT_CHARS = 4000
MAX_REASON_CHARS = 1000


class MemoryOperationError(ValueError):
    """An operation that cannot be done as asked; the message says why and what to do."""


class MemoryNotFoundError(MemoryOperationError):
    pass


def check_type(memory_type: str) -> str:
    value = (memory_type or "").strip().lower()
    if value not in MEMORY_TYPES:
        # The value is echoed scrubbed: an error reaches logs and MCP clients.
        from memory_pipeline.text.scrub import scrub_secrets

        shown = scrub_secrets(str(memory_type)[:100]).text
        raise MemoryOperationError(f"unknown memory_type {shown!r}: use one of {', '.join(MEMORY_TYPES)}")
    return value


def check_text(value: str | None, what: str, limit: int, required: bool = True) -> str | None:
    if value is None or not str(value).strip():
        if required:
            raise MemoryOperationError(f"{what} must be a non-empty string")
        return None
    if not isinstance(value, str):
        raise MemoryOperationError(f"{what} must be a string")
    if len(value) > limit:
        raise MemoryOperationError(f"{what} is {len(value)} characters; the limit is {limit}")
    # Every text a tool hands in (content, reasoning, reason) is scrubbed before it is stored.
    # (detect-secrets is imported here, not with the module: a read never needs it.)
    from memory_pipeline.text.scrub import scrub_secrets

    return scrub_secrets(value.strip()).text


def check_confidence(value: float | None) -> float:
    if value is None:
        return 0.8
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise MemoryOperationError(f"confidence must be a number between 0 and 1, got {value!r}") from None
    if not 0.0 <= value <= 1.0:
        raise MemoryOperationError(f"confidence must be between 0 and 1, got {value}")
    return value


@dataclass(frozen=True)
class MemoryFields:
    """The columns of a memory besides its type and content, with the defaults a new one gets."""

    reasoning: str | None = None
    occurred_at: datetime | None = None
    happens_at: datetime | None = None
    confidence: float = 0.8
    source: str = "live"
    source_ref: str | None = None


@dataclass
class TypedMemories:
    """Operations on one database's typed memories, embedding content with ``embedder``."""

    store: TypedMemoryStore
    embedder: Embedder

    @classmethod
    def open(cls, uri: str, embedder: Embedder) -> "TypedMemories":
        return cls(TypedMemoryStore(uri, embedder.dim), embedder)

    def row(self, tenant: Tenant, memory_type: str, content: str, **fields) -> dict:
        """A memory row, not yet embedded; ``fields`` are the columns of ``MemoryFields``."""
        at = now_utc()
        return {
            "id": memory_id(tenant.key, memory_type, content),
            "tenant": tenant.key,
            "memory_type": memory_type,
            "content": content,
            **asdict(MemoryFields(**fields)),
            "model": None,
            "vector": None,
            "created_at": at,
            "updated_at": at,
            "content_hash": content_hash(content),
        }

    def embed_rows(self, rows: list[dict]) -> None:
        todo = [r for r in rows if r.get("vector") is None]
        if todo:
            vectors = self.embedder.embed([r["content"] for r in todo])
            for row, vec in zip(todo, vectors, strict=True):
                row["vector"] = vec.tolist()
                row["model"] = self.embedder.name

    def _audit(
        self,
        tenant: Tenant,
        mid: str,
        op: str,
        *,
        actor: str,
        reason: str | None,
        memory_type: str | None = None,
        fields: Iterable[str] = (),
    ) -> None:
        """Append the one audit row of an operation: which memory, what was done to which fields, why, by whom.

        Every operation ends here, so the tables it wrote are settled here too (``settle``).
        """
        self.store.append_audit([{
            "tenant": tenant.key, "memory_id": mid, "op": op, "memory_type": memory_type,
            "fields": sorted(fields), "reason": reason, "actor": actor,
        }])
        self.store.settle()

    def store_memory(
        self,
        tenant: Tenant,
        memory_type: str,
        content: str,
        *,
        reasoning: str | None = None,
        occurred_at: datetime | None = None,
        happens_at: datetime | None = None,
        confidence: float | None = None,
        source: str = "live",
        source_ref: str | None = None,
        actor: str = "cli",
    ) -> dict:
        memory_type = check_type(memory_type)
        content = check_text(content, "content", MAX_CONTENT_CHARS)
        reasoning = check_text(reasoning, "reasoning", MAX_REASON_CHARS, required=False)
        if source not in INGESTION_SOURCES:
            raise MemoryOperationError(f"unknown source {source!r}: use one of {', '.join(INGESTION_SOURCES)}")
        row = self.row(
            tenant, memory_type, content, reasoning=reasoning, occurred_at=occurred_at or now_utc(),
            happens_at=happens_at, confidence=check_confidence(confidence), source=source, source_ref=source_ref,
        )
        existing = self.store.get_memory(tenant.key, row["id"])
        if existing:
            row["created_at"] = existing["created_at"]
        self.embed_rows([row])
        self.store.upsert_memories([row])
        self._audit(tenant, row["id"], "store", actor=actor, reason=reasoning, memory_type=memory_type,
                    fields=[k for k in ("content", "reasoning", "happens_at") if row[k] is not None])
        return public(row)

    def update_memory(
        self,
        tenant: Tenant,
        mid: str,
        *,
        reason: str | None = None,
        actor: str = "cli",
        **changes,
    ) -> dict:
        # Checked before anything is written: a refused reason must not leave an update without its audit row.
        reason = check_text(reason, "reason", MAX_REASON_CHARS, required=False)
        old = self.store.get_memory(tenant.key, mid)
        if old is None:
            raise MemoryNotFoundError(f"no memory {mid!r} for {tenant.key}: find its id with a query or recall first")
        new = dict(old)
        changed = []
        for key, value in changes.items():
            if value is None:
                continue
            if key == "memory_type":
                value = check_type(value)
            elif key == "content":
                value = check_text(value, "content", MAX_CONTENT_CHARS)
            elif key == "reasoning":
                value = check_text(value, "reasoning", MAX_REASON_CHARS)
            elif key == "confidence":
                value = check_confidence(value)
            elif key not in ("happens_at", "occurred_at"):
                raise MemoryOperationError(f"cannot update {key!r}: content, memory_type, reasoning, happens_at, occurred_at or confidence")
            old_value = new.get(key)
            if isinstance(value, float) and isinstance(old_value, float) and abs(old_value - value) < 1e-6:
                continue  # stored as float32: 0.8 reads back as 0.800000011920929
            if old_value != value:
                new[key] = value
                changed.append(key)
        if not changed:
            raise MemoryOperationError("nothing to update: pass at least one changed field")
        new["updated_at"] = now_utc()
        new["content_hash"] = content_hash(new["content"])
        new["vector"] = None
        self.embed_rows([new])
        self.store.upsert_memories([new])
        self._audit(tenant, mid, "update", actor=actor, reason=reason, memory_type=new["memory_type"], fields=changed)
        return public(new)

    def forget_memory(self, tenant: Tenant, mid: str, reason: str, actor: str = "cli") -> dict:
        reason = check_text(reason, "reason", MAX_REASON_CHARS)
        if self.store.get_memory(tenant.key, mid) is None:
            raise MemoryNotFoundError(f"no memory {mid!r} for {tenant.key}: nothing to forget")
        with commit_lock(self.store.uri):  # no write lands between the delete and the rewrite
            self.store.delete_memories(tenant.key, [mid])
            self.store.redact_audit(tenant.key, mid)
            self.store.purge_deleted()
        from memory_pipeline.timeline.records import SupersessionStore

        # What the forgotten memory had replaced stands again (timeline/records.py).
        SupersessionStore(self.store.uri).release(tenant.key, f"facts/{mid}")
        # Only id, reason and time: what was forgotten is not written anywhere.
        self._audit(tenant, mid, "forget", actor=actor, reason=reason)
        return {"id": mid, "forgotten": True, "reason": reason}

    def skip_memory(
        self, tenant: Tenant, content: str, reason: str, memory_type: str = "observation", actor: str = "cli"
    ) -> dict:
        """Record a decision not to store ``content``; extraction will not store it either."""
        memory_type = check_type(memory_type)
        content = check_text(content, "content", MAX_CONTENT_CHARS)
        reason = check_text(reason, "reason", MAX_REASON_CHARS)
        mid = memory_id(tenant.key, memory_type, content)
        self._audit(tenant, mid, "skip", actor=actor, reason=reason, memory_type=memory_type)
        return {"id": mid, "skipped": True, "reason": reason}


def public(row: dict) -> dict:
    """A memory as tools and the CLI show it: no vector, times as ISO-8601."""
    out = {}
    for key, value in row.items():
        if key in ("vector", "model"):
            continue
        out[key] = value.isoformat() if isinstance(value, datetime) else value
    if isinstance(out.get("confidence"), float):
        out["confidence"] = round(out["confidence"], 3)
    out["has_embedding"] = row.get("vector") is not None
    return out
