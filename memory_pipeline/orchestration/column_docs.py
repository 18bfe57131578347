"""What each column of the tables the assets write means, as the UI shows it beside the asset's
column schema (``materializations.column_schema``).

Keyed by column name, then by table where one name means different things in different tables.
A test requires a description for every column of every schema an asset shows.
"""

from __future__ import annotations

SHARED = {
    "id": "Stable row id: the upsert key, so a rerun replaces the row instead of adding one.",
    "tenant": "Partition key of the owning tenant, '<agent>~<user>'; every read filters on it.",
    "agent_id": "The agent whose memory this is.",
    "user_id": "The user of the agent, or '_global' for agent-wide memory.",
    "path": "Source file, relative to the workspace root.",
    "start_line": "First line of the source the row covers (1-based).",
    "end_line": "Last line of the source the row covers (inclusive).",
    "turn_ids": "Transcript turns the row covers, in order.",
    "text_hash": "Hash of the scrubbed text: the embedding cache key with the model.",
    "model": "Embedding model that produced the vector.",
    "vector": "Unit-length embedding of the text (cosine similarity is a dot product).",
    "created_at": "When the row was first written (UTC).",
    "updated_at": "When the row was last written (UTC).",
    "episode_ids": "Episodes that mention it.",
    "aliases": "Other names the same entity was seen under.",
}

BY_TABLE = {
    "chunks": {
        "source": "Where the text comes from: memory (Markdown notes) or sessions (transcript windows).",
        "heading": "Markdown heading path above the chunk, if any.",
        "text": "The chunk's text, secrets scrubbed; full-text indexed.",
        "file_hash": "Content hash of the file version the chunk was cut from.",
        "file_date": "Date of a dated note (memory/YYYY-MM-DD.md), used for temporal decay.",
        "ts_start": "Time of the first turn of a transcript window.",
    },
    "files": {
        "kind": "File kind: memory note, session transcript or other (recorded, not indexed).",
        "status": "indexed, skipped (with its reason) or recorded.",
        "reason": "Why the file was skipped.",
        "content_hash": "Hash of the content last indexed; an unchanged file is skipped.",
        "size": "Size in bytes when last seen.",
        "mtime_ns": "Modification time when last seen (ns since the epoch).",
        "chunk_count": "Chunks the file has in the index.",
        "indexed_at": "When the file was last indexed (UTC).",
    },
    "episodes": {
        "summary": "Extractive (or LLM) summary of the session; full-text indexed.",
        "l0_abstract": "One-sentence abstract of the session (about 200 characters).",
        "key_topics": "Proper-noun topics of the session.",
        "source_id": "Session and compaction count: makes consolidating a session again idempotent.",
        "session_id": "The transcript's session id.",
        "day": "Day (UTC) the session completed.",
        "completed_at": "When the session completed.",
        "completed_by": "What completed it: marker (a session.completed line) or idle (the idle timeout).",
        "expires_at": "When pruning removes the episode (TTL).",
        "promoted_at": "When dreaming promoted it into the consolidated notes; null until then.",
        "produced_by": "Which path wrote the summary: compaction, extractive or llm.",
        "llm_model": "Chat model used when produced_by is llm.",
        "graph_pending": "True from the episode's writing until the knowledge graph is built from "
        "this version of it (semantic_graph reads the pending ones, so a failed run is caught up).",
    },
    "entities": {
        "name": "Canonical name of the entity.",
        "type": "spaCy entity type (PERSON, ORG, GPE, ...).",
        "first_seen": "When a session first mentioned it.",
        "last_seen": "When a session last mentioned it.",
    },
    "relations": {
        "subject_id": "Entity id of the subject.",
        "subject": "Subject as written.",
        "predicate": "Normalised relation (lives_in, works_at, ...).",
        "object_id": "Entity id of the object, when it is an entity.",
        "object": "Object as written.",
        "object_type": "Type of the object (an entity type or a value class).",
        "valid_from": "When the relation starts holding.",
        "valid_to": "When a later statement ended it; null while it holds.",
        "single_valued": "Whether a newer value replaces the old one (lives_in) or adds to it.",
        "source_episode": "Episode the relation was read from.",
        "line": "Transcript line of the evidence.",
        "evidence": "The sentence the relation was read from.",
        "rule": "Extraction rule that matched.",
        "confidence": "Confidence of the extraction (0..1).",
        "said_at": "When the statement was said.",
    },
    "memories": {
        "memory_type": "identity, preference, fact, event, decision, goal, routine, observation, todo or anomaly.",
        "content": "The memory as one statement; full-text indexed.",
        "reasoning": "Why it was stored, when given.",
        "occurred_at": "When it was said or happened.",
        "happens_at": "When a planned event or todo is due.",
        "confidence": "Confidence (0..1).",
        "source": "What stored it: live (a tool call) or the extraction run over notes and sessions.",
        "source_ref": "Citation of the source (path#Lline).",
        "content_hash": "Hash of the content: the same memory is stored once.",
    },
    "activation": {
        "row_id": "The recall row (chunk, episode or typed memory) the activation is of.",
        "activation": "Decayed count of times recall returned or used the row (activation/decay.py).",
        "use_activation": "Decayed count of times the row was used: injected or fetched with get.",
        "tier": "hot, warm or cool, from the activation.",
        "used": "Times the row was used (injected, fetched), all time.",
        "returned": "Times recall returned the row, all time.",
        "last_at": "When the row was last returned or used (UTC).",
        "computed_at": "When the nightly run computed this row (UTC).",
    },
}


def describe(table: str, column: str) -> str | None:
    return BY_TABLE.get(table, {}).get(column) or SHARED.get(column)
