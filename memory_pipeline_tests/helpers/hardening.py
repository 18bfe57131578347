"""Helpers of the hardening tests: a workspace of two agents and four users whose notes and
transcripts carry realistic (fake) secrets, and one function that pushes it through every stage
the pipeline has (flush, L0 index, episodes, semantic graph, dedup, dreaming, typed memories, the
L0 index again for the dreamed files), through real Dagster runs with the hashing embedder.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg
import polars as pl
from pyarrow import fs

from memory_pipeline.consolidation import defs as consolidation
from memory_pipeline.consolidation.launch import completed_tenants, run_consolidation, run_dreaming
from memory_pipeline.embedding import HashEmbedder
from memory_pipeline.episodes.flush import flush
from memory_pipeline.l0.assets import l0_assets, l0_index_job
from memory_pipeline.l0.checks import check_tenant
from memory_pipeline.l0.store import ChunkIndex
from memory_pipeline.memories.assets import typed_memory_assets, typed_memories_job
from memory_pipeline.memories.operations import TypedMemories
from memory_pipeline.orchestration.runs import discover_tenants, materialization_metadata, run_partitioned_job
from memory_pipeline.tenancy import Tenant
from memory_pipeline_tests.helpers import make_resources, write
from memory_pipeline_tests.helpers.object_store import BUCKET
from memory_pipeline_tests.secret_corpus import Planted, corpus

# Fake secrets in the formats of the providers the scrubber knows. Each is assembled from parts
# so this file itself does not look like a leaked credential to a repository scanner.
SECRETS = {
    "aws_access_key": "AKIA" + "Q7RZ4XK2PLM9WB3T",
    "aws_secret": "wJalrXUtnF" + "EMI/K7MDENG/bPxRfiCY9Q2Lm4Tz",
    "openai": "sk-proj-" + "T9vQ2mXk7LpR4sWz8bNc3yHd6FgJ1aE5",
    "anthropic": "sk-ant-api03-" + "Zq8Lm2Vx7Nc4Rt9Kp3Wy6Hb1Jd5Gf0Sa",
    "github": "ghp_" + "R8mK2xQ7vL4pN9sW3zT6yB1cH5dJ0fG2aE4u",
    "slack": "xoxb-" + "2847193650-5829173640-Qm7Rk2Xv9Lp4Nt8W",
    "stripe": "sk_live_" + "51HqRt7Km2Xv9Lp4Nt8WzB3c",
    "google": "AIza" + "SyB7x9Q2mK4vL8pN3sW6zT1yH5dJ0fG2aE4",
    "jwt": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    + ".eyJzdWIiOiJhbGljZS0xMjM0IiwibmFtZSI6IkFsaWNlIn0"
    + ".Qm7Rk2Xv9Lp4Nt8WzB3cY6dF1gH5jK0sA2eU4iO",
    "bearer": "d8f2c9a1" + "7b4e4f0c9a3d2e1f6b8c7a5d",
    "url_password": "Tr0ub4dor" + "-Horse-77",
    "assigned_password": "hunter2" + "-Correct-Battery-9",
    "pem_body": "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" + "BKcwggSjAgEAAoIBAQC7k3Xv9Lp4Nt8W",
}

PEM = (
    "-----BEGIN PRIVATE KEY-----\n"
    f"{SECRETS['pem_body']}\n"
    "zB3cY6dF1gH5jK0sA2eU4iOq8Lm2Vx7Nc4Rt9Kp3Wy6Hb1Jd5Gf0Sa7Xm2Qv\n"
    "-----END PRIVATE KEY-----"
)

CANARY = "Marmalade-quokka-lighthouse"
"""An ordinary word that is stored: proves a raw-byte scan can see stored text at all."""

USER_WORDS = {"alice": "Periwinkle-armadillo", "bob": "Tangerine-narwhal", "carol": "Saffron-pelican"}
"""A word only one user ever says: where its bytes are, that user's memory is."""

DAYS = ("2026-11-02", "2026-11-03", "2026-11-04", "2026-11-05", "2026-11-06")


def _leaky_lines() -> list[str]:
    s = SECRETS
    return [
        f"I prefer deploys on Tuesdays. Our AWS key is {s['aws_access_key']} and "
        f"aws_secret_access_key = {s['aws_secret']}",
        f"We decided to rotate the OpenAI key {s['openai']} next week, {CANARY} project.",
        f"The Anthropic key is {s['anthropic']} and GitHub token {s['github']}.",
        f"Slack bot token {s['slack']}; Stripe uses {s['stripe']}; maps key {s['google']}.",
        f"Call the API with Authorization: Bearer {s['bearer']} and the session JWT {s['jwt']}",
        f"The database is postgres://admin:{s['url_password']}@db.internal:5432/app and "
        f"password = \"{s['assigned_password']}\"",
    ]


def _session(day: str, user: str, lines: Iterable[str], sid: str) -> str:
    start = datetime.fromisoformat(day).replace(hour=9, tzinfo=UTC)
    records = []
    for i, text in enumerate(lines):
        role = "user" if i % 2 == 0 else "assistant"
        ts = start + timedelta(minutes=i)
        records.append({"role": role, "content": text, "ts": ts.isoformat(), "turn_id": f"{sid}-t{i}"})
    records.append({"type": "compaction", "summary": f"They discussed keys; the key {SECRETS['openai']} was shared.",
                    "ts": (start + timedelta(minutes=30)).isoformat()})
    records.append({"type": "session.completed", "ts": (start + timedelta(minutes=40)).isoformat()})
    return "".join(json.dumps(r) + "\n" for r in records)


def build_leaky_workspace(root: Path) -> None:
    """Two agents, four tenants; every secret appears in notes and in transcripts of each user."""
    lines = _leaky_lines()
    note = "# Ops notes\n\n" + "\n\n".join(lines) + "\n\n## Keys\n\n```\n" + PEM + "\n```\n"
    write(root, "ops-bot/MEMORY.md", f"# Ops bot\n\nThe {CANARY} runbook lives in the wiki.\n\n" + note)
    for user in ("alice", "bob"):
        word = USER_WORDS[user]
        write(root, f"ops-bot/users/{user}/MEMORY.md", f"# {user.title()}\n\n{user.title()} works on {word}.\n\n" + note)
        for n, day in enumerate(DAYS):
            said = [f"{user.title()} here, about {word}. {lines[(n + k) % len(lines)]}" for k in range(4)]
            said.append(f"My private key is:\n{PEM}")
            write(root, f"ops-bot/sessions/{user}/s{n}.jsonl", _session(day, user, said, f"{user}{n}"))
    carol = USER_WORDS["carol"]
    write(root, "crm-bot/users/carol/MEMORY.md", f"# Carol\n\nCarol prefers email about {carol}.\n\n" + note)
    write(root, "crm-bot/sessions/carol/c1.jsonl", _session(DAYS[0], "carol", [f"{carol}: {x}" for x in lines], "carol1"))
    plant_corpus(root)


CORPUS: list[Planted] = corpus()
"""70+ credential formats planted in every field the pipeline reads (see ``plant_corpus``)."""

CORPUS_FIELDS = (
    "note text", "file name", "folder name", "session file name", "message content", "role", "turn id",
    "line type", "compaction summary", "other line fields", "flushed message", "MCP content",
    "MCP reasoning", "MCP skip reason", "MCP memory type",
)


def corpus_needles() -> dict[str, str]:
    """{name: string that must never be stored}: every line of every planted secret, as written
    and as JSON writes it (escaped), so a copy in an event log or a pickle is found too."""
    needles = {}
    for entry in CORPUS:
        for n, secret in enumerate(entry.secrets):
            for k, part in enumerate(p for p in secret.split("\n") if len(p) >= 8):
                needles[f"{entry.name}/{n}/{k}"] = part
                escaped = json.dumps(part)[1:-1]
                if escaped != part:
                    needles[f"{entry.name}/{n}/{k}/json"] = escaped
    return needles


def _name_safe(secret: str) -> str | None:
    return secret if all(c.isalnum() or c in "_-." for c in secret) and len(secret) <= 64 else None


ALONE = [p for p in CORPUS if p.alone]
"""Formats recognisable without a label: those are planted alone in ids, names and types."""


def plant_corpus(root: Path) -> None:
    """Every corpus format in alice's notes and in one completed session of hers, in every field
    a transcript line has (content, role, turn id, type, summary, extra fields), and as the name
    of a note, of a session file and of a user folder."""
    write(root, "ops-bot/users/alice/memory/credentials.md",
          "# Credentials pasted here\n\n" + "\n\n".join(f"- {p.line}" for p in CORPUS) + "\n")
    names = [n for p in ALONE if (n := _name_safe(p.secrets[0]))]
    write(root, f"ops-bot/users/alice/memory/{names[0]}.md", "# A note named after a token\n\nIt is about keys.\n")
    write(root, f"ops-bot/users/{names[1]}/MEMORY.md", "# A user folder named after a token\n")
    start = datetime.fromisoformat(DAYS[1]).replace(hour=14, tzinfo=UTC)
    records: list[dict] = []
    for i, entry in enumerate(CORPUS):
        ts = (start + timedelta(seconds=20 * i)).isoformat()
        role = "user" if i % 2 == 0 else "assistant"
        alone = ALONE[i % len(ALONE)].secrets[0]
        if i % 9 == 4:
            role = alone
        records.append({"role": role, "content": f"Alice here, {USER_WORDS['alice']}. {entry.line}", "ts": ts,
                        "turn_id": alone, "metadata": {"api_key": entry.secrets[-1]}})
        records.append({"type": alone, "ts": ts})
    records.append({"type": "compaction", "ts": (start + timedelta(hours=1)).isoformat(),
                    "summary": " ".join(p.line for p in CORPUS)})
    records.append({"type": "session.completed", "ts": (start + timedelta(hours=2)).isoformat()})
    write(root, "ops-bot/sessions/alice/corpus.jsonl", "".join(json.dumps(r) + "\n" for r in records))
    write(root, f"ops-bot/sessions/alice/{names[2]}.jsonl", json.dumps(records[0]) + "\n")


def mcp_writes(root: Path, lance_uri: str) -> list[tuple[str, bool]]:
    """Every corpus line through the MCP write tools of a real server object, as an agent would
    call them; returns (tool, is_error) per call."""
    import anyio

    from memory_pipeline.config import Settings
    from memory_pipeline.mcp_server import build_server

    settings = Settings(root=str(root), lancedb_uri=lance_uri, embedder="hash")
    server = build_server("ops-bot", "alice", settings=settings)
    calls = []
    for i, entry in enumerate(CORPUS):
        calls.append(("memory_graph_store", {"memory_type": "fact", "content": f"Alice noted: {entry.line}",
                                             "reasoning": f"said while pasting {entry.line}"}))
        if i % 10 == 0:
            calls.append(("memory_graph_skip", {"content": entry.line, "reason": f"holds {entry.line}"}))
            calls.append(("memory_graph_store", {"memory_type": ALONE[i % len(ALONE)].secrets[0], "content": "typed"}))

    async def call_all() -> list[tuple[str, bool]]:
        out = []
        for name, args in calls:
            try:
                result = await server.call_tool(name, args)
                out.append((name, bool(getattr(result, "isError", getattr(result, "is_error", False)))))
            except Exception:  # a refused call (ToolError) is an error result, not a failure
                out.append((name, True))
        return out

    return anyio.run(call_all)


def flush_messages() -> list[dict]:
    lines = _leaky_lines() + [p.line for p in CORPUS]
    return [{"role": "user", "content": f"Remember: I prefer the staging stack. {line}"} for line in lines]


def pipeline_defs(root: Path, lance_uri: str) -> dg.Definitions:
    return dg.Definitions(
        assets=[*l0_assets, *consolidation.ASSETS, *typed_memory_assets],
        jobs=[l0_index_job, *consolidation.JOBS, typed_memories_job],
        resources=make_resources(root, lance_uri),
    )


def run_everything(root: Path, lance_uri: str, instance: dg.DagsterInstance) -> dict[str, list]:
    """Every stage, as the sensors would trigger them; returns the Dagster results by stage."""
    defs = pipeline_defs(root, lance_uri)
    flush(flush_messages(), "ops-bot", "alice", root=root, now=datetime(2026, 11, 6, 18, tzinfo=UTC))
    results: dict[str, list] = {"mcp": mcp_writes(root, lance_uri)}
    tenants = discover_tenants(root)
    results["l0"] = [run_partitioned_job(defs, "l0_index_job", instance, tenants)]
    results["consolidation"] = run_consolidation(defs, instance, completed_tenants(root, 30))
    results["dreaming"] = run_dreaming(defs, instance, tenants)
    results["typed_memories"] = [run_partitioned_job(defs, "typed_memories_job", instance, tenants)]
    results["l0_again"] = [run_partitioned_job(defs, "l0_index_job", instance, tenants)]
    return results


def stage_metadata(results: Iterable[dg.ExecuteInProcessResult]) -> dict[str, dict]:
    """{asset: numeric metadata summed over runs}, each run's figures as its summary gives them
    (a run over several partitions: the partitions' own figures added up)."""
    out: dict[str, dict] = {}
    for result in results:
        for name, figures in materialization_metadata(result).items():
            into = out.setdefault(name, {})
            for key, value in figures.items():
                into[key] = into.get(key, 0) + value
    return out


def files_containing(folder: Path, needles: dict[str, str], skip: Path | None = None) -> dict[str, list[str]]:
    """{needle name: [files whose raw bytes contain it]} for every file under ``folder``."""
    found: dict[str, list[str]] = {}
    encoded = {name: value.encode() for name, value in needles.items()}
    for path in folder.rglob("*"):
        if not path.is_file() or (skip is not None and path.is_relative_to(skip)):
            continue
        data = path.read_bytes()
        for name, value in encoded.items():
            if value in data:
                found.setdefault(name, []).append(str(path.relative_to(folder)))
    return found


DIM = 64


def ingest_in_process(root: Path, lance_uri: str) -> dg.ExecuteInProcessResult:
    defs = dg.Definitions(assets=l0_assets, jobs=[l0_index_job], resources=make_resources(root, lance_uri))
    return run_partitioned_job(defs, "l0_index_job", dg.DagsterInstance.ephemeral(), discover_tenants(root))


def snapshot(lance_uri: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    store = ChunkIndex(lance_uri)
    chunks = pl.from_arrow(store.db.open_table("chunks").to_arrow())
    files = pl.from_arrow(store.db.open_table("files").to_arrow())
    chunk_cols = ["id", "tenant", "path", "source", "start_line", "end_line", "text", "text_hash", "file_hash", "vector"]
    file_cols = ["id", "tenant", "path", "kind", "status", "content_hash", "chunk_count", "model"]
    return chunks.select(chunk_cols).sort("id"), files.select(file_cols).sort("id")


def assert_same_index(lance_uri: str, clean_uri: str) -> None:
    chunks, files = snapshot(lance_uri)
    clean_chunks, clean_files = snapshot(clean_uri)
    assert chunks["id"].is_unique().all()
    assert chunks.height == clean_chunks.height
    assert chunks.equals(clean_chunks)
    assert files.equals(clean_files)
    store = ChunkIndex(lance_uri, dim=DIM)
    for tenant in chunks["tenant"].unique().to_list():
        failed = [o for o in check_tenant(store, tenant, DIM) if not o.passed]
        assert not failed, (tenant, failed)


ALICE = Tenant("support-bot", "alice")
ALICE_WORD = "marimbaphone"  # said by Alice only


def objects_containing(url: str, word: str) -> list[str]:
    """Keys of the bucket's objects whose bytes hold ``word`` (a raw scan, like the local one)."""
    s3 = fs.S3FileSystem(access_key="test", secret_key="test", region="us-east-1", endpoint_override=url, scheme="http")
    needle = word.lower().encode()
    found = []
    for info in s3.get_file_info(fs.FileSelector(BUCKET, recursive=True)):
        if info.type == fs.FileType.File:
            with s3.open_input_stream(info.path) as stream:
                if needle in stream.read().lower():
                    found.append(info.path)
    return found


def with_concurrent_writer(monkeypatch, module, name: str, lance_uri: str, alice_memory_id: str) -> dict:
    """Before ``module.name`` (a purge step) first runs, another connection stores one memory of
    alice's and updates another (``alice_memory_id``); returns what it wrote once it has."""
    done: dict = {}
    purge = getattr(module, name)

    def purge_after_a_concurrent_write(table, local):
        if not done:
            other = TypedMemories.open(lance_uri, HashEmbedder())  # its own connection, as another process has
            done["new"] = other.store_memory(ALICE, "fact", f"Alice bought a {ALICE_WORD} in November")
            done["updated"] = other.update_memory(ALICE, alice_memory_id, content="Prefers invoices as a portal link")
        return purge(table, local)

    monkeypatch.setattr(module, name, purge_after_a_concurrent_write)
    return done
