"""Entity deduplication within a tenant: which entities are the same, which only might be.

Signals, strongest first:
1. equal names once normalized further (accents, titles, a leading "the", company suffixes);
2. a short name inside a full one: "Alice" in "Alice Johnson", "Okonkwo" in "Lena Okonkwo",
   "Cobalt Loop" in "Cobalt Loop Recycling"; when the short name fits several full names
   ("Alice Johnson" and "Alice Smith") the pairs are flagged as ambiguous, not merged;
3. fuzzy spelling (rapidfuzz ratio >= 90 merges; 80-90 merges only when the name vectors agree,
   cosine >= 0.8, and is flagged as ambiguous otherwise).
An entity is merged into the fuller name (more words, then more episodes, then the smaller id).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from rapidfuzz import fuzz, process

from memory_pipeline.knowledge.graph import normalize_name

MERGED = "merged"
AMBIGUOUS = "ambiguous"
FUZZY_MERGE = 90.0
FUZZY_REVIEW = 80.0
VECTOR_AGREE = 0.8
_SUFFIXES = frozenset({"inc", "ltd", "llc", "gmbh", "plc", "corp", "co", "sa", "ag", "bv", "limited", "corporation"})
_PERSONISH = frozenset({"PERSON"})


@dataclass(frozen=True)
class Decision:
    from_id: str
    into_id: str
    status: str  # merged | ambiguous
    reason: str
    score: float


def strict_key(name: str) -> str:
    words = normalize_name(name).split()
    if words and words[0] == "the":
        words = words[1:]
    while len(words) > 1 and words[-1] in _SUFFIXES:
        words = words[:-1]
    return " ".join(words)


def _fuller(a: dict, b: dict) -> tuple[dict, dict]:
    """(merged away, kept): keep the name with more words, then more episodes, then the smaller id."""
    ka = (len(strict_key(a["name"]).split()), len(a.get("episode_ids") or []))
    kb = (len(strict_key(b["name"]).split()), len(b.get("episode_ids") or []))
    if ka != kb:
        return (b, a) if ka > kb else (a, b)
    return (b, a) if a["id"] < b["id"] else (a, b)


def _compatible(a: dict, b: dict) -> bool:
    if a["type"] == b["type"]:
        return True
    return a["type"] not in _PERSONISH and b["type"] not in _PERSONISH


def plan_merges(entities: Sequence[dict]) -> list[Decision]:
    """Merge and review decisions for one tenant's entities."""
    items = [e for e in entities if strict_key(e["name"])]
    decisions: list[Decision] = []
    decided: set[frozenset] = set()

    def add(a: dict, b: dict, status: str, reason: str, score: float) -> None:
        pair = frozenset((a["id"], b["id"]))
        if pair in decided or a["id"] == b["id"]:
            return
        decided.add(pair)
        gone, kept = _fuller(a, b)
        decisions.append(Decision(gone["id"], kept["id"], status, reason, round(float(score), 3)))

    by_key: dict[str, list[dict]] = {}
    for e in items:
        by_key.setdefault(strict_key(e["name"]), []).append(e)
    for group in by_key.values():
        for other in group[1:]:
            if _compatible(group[0], other):
                add(group[0], other, MERGED, "normalized name", 1.0)

    for short in items:
        words = strict_key(short["name"]).split()
        if short["type"] not in _PERSONISH and len(words) < 2:
            continue  # "Lumen" inside "Lumen Pipes" is a different thing
        if len(words) == 1 and len(words[0]) < 3:
            continue
        hosts = []
        for full in items:
            fwords = strict_key(full["name"]).split()
            if len(fwords) <= len(words) or not _compatible(short, full):
                continue
            prefix = fwords[: len(words)] == words
            last_name = short["type"] in _PERSONISH and len(words) == 1 and fwords[-1] == words[0]
            if prefix or last_name:
                hosts.append(full)
        if len(hosts) == 1:
            add(short, hosts[0], MERGED, "name inside full name", 0.9)
        else:
            for host in hosts:
                add(short, host, AMBIGUOUS, f"name fits {len(hosts)} full names", 0.5)

    if len(items) > 1:
        keys = [strict_key(e["name"]) for e in items]
        scores = process.cdist(keys, keys, scorer=fuzz.ratio, score_cutoff=FUZZY_REVIEW, workers=1)
        rows, cols = np.nonzero(scores)
        for i, j in zip(rows.tolist(), cols.tolist()):
            if i >= j or not _compatible(items[i], items[j]) or keys[i] == keys[j]:
                continue
            score = float(scores[i, j])
            if score >= FUZZY_MERGE:
                add(items[i], items[j], MERGED, "fuzzy name", score / 100)
                continue
            cosine = _cosine(items[i].get("vector"), items[j].get("vector"))
            if cosine is not None and cosine >= VECTOR_AGREE:
                add(items[i], items[j], MERGED, f"fuzzy name and vector (cosine {cosine:.2f})", score / 100)
            else:
                add(items[i], items[j], AMBIGUOUS, "similar names", score / 100)
    return _consistent(decisions)


def _cosine(a, b) -> float | None:
    if a is None or b is None:
        return None
    va, vb = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    denominator = float(np.linalg.norm(va) * np.linalg.norm(vb))
    return float(va @ vb) / denominator if denominator else None


def _consistent(decisions: list[Decision]) -> list[Decision]:
    """Each entity merged at most once, into a final target (no chains or cycles)."""
    parent: dict[str, str] = {}

    def root(x: str) -> str:
        while x in parent:
            x = parent[x]
        return x

    out = []
    for d in sorted(decisions, key=lambda d: (d.status != MERGED, -d.score, d.from_id)):
        if d.status != MERGED:
            out.append(d)
            continue
        a, b = root(d.from_id), root(d.into_id)
        if a == b:
            continue
        parent[a] = b
        out.append(Decision(a, b, d.status, d.reason, d.score) if a != d.from_id or b != d.into_id else d)
    # Flags between entities that ended up merged anyway say nothing new.
    return [d for d in out if d.status == MERGED or root(d.from_id) != root(d.into_id)]
