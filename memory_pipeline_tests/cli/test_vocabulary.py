"""Proves: every command speaks one vocabulary. Bad input, including each case that once printed
a traceback or made a partition of a typo, ends with exit 2, one line on stderr, nothing on
stdout, no traceback, and no new partition, folder or tenant; every command that prints data
prints one clean JSON document with ``--json``; a summary covers every run a command made.

Commands run in-process through typer's runner, which goes through the same ``main`` as the
installed ``memory-pipeline`` script (the group class handles every error), on one indexed copy
of the sample workspace.
"""

from __future__ import annotations

import importlib

from memory_pipeline.orchestration.partitions import TENANTS_PARTITION
from memory_pipeline.orchestration.runs import local_instance

ALICE = ("-a", "support-bot", "-u", "alice")
LONG_NAME = "support-bot/users/alice/memory/" + "n" * 300 + ".md"

BAD_INPUTS = [
    # (command line, stdin, words the one line must hold)
    (["get", LONG_NAME, *ALICE], None, "file name too long"),
    (["get", "a" * 300, *ALICE], None, "not in the memory"),
    (["search", "caf\udcc3\udca9 refund", *ALICE], None, "not valid UTF-8"),
    (["ingest", "--tenant", "support-bot"], None, "No such option: --tenant"),
    (["ingest", "-a", "support-bot~alice"], None, "invalid agent id"),
    (["ingest", "-a", "../x", "-u", "y"], None, "invalid agent id"),
    (["ingest", "-a", "nosuch", "-u", "bob"], None, "unknown agent 'nosuch'"),
    (["ingest", "-a", "support-bot", "-u", "nosuch"], None, "unknown user 'nosuch'"),
    (["ingest", "--all", "-a", "support-bot"], None, "--all selects every tenant"),
    (["consolidate", "-a", "support-bot", "--day", "2026-13-45"], None, "YYYY-MM-DD"),
    (["episodes", "-a", "../x", "-u", "alice"], None, "invalid agent id"),
    (["flush", *ALICE], "not json", "not JSON"),
    (["flush", *ALICE], '{"role": "user"}', "list of {role, content}"),
    (["flush", "-a", "../../etc", "-u", "alice"], "[]", "invalid agent id"),
    (["search", "refund", "-a", "nosuch"], None, "unknown agent 'nosuch'"),
    (["search", "refund", "-a", "support-bot", "-u", "carol"], None, "unknown user 'carol'"),
    (["search", "refund", *ALICE, "--limit", "0"], None, "--limit"),
    (["search", "refund", *ALICE, "--source", "notes"], None, "unknown source"),
    (["get", "/etc/passwd", *ALICE], None, "absolute path"),
    (["get", "support-bot/MEMORY.md", *ALICE, "--from", "0"], None, "--from"),
    (["get", "support-bot/MEMORY.md", *ALICE, "--from", "9999"], None, "past its end"),
    (["inject", "hello there friend", "-a", "support-bot", "-u", "../bob"], None, "invalid user id"),
    (["memories", "query", *ALICE, "--happens-within", "soon"], None, "not a duration"),
    (["memories", "query", *ALICE, "--sort", "sideways"], None, "sort_by"),
    (["memory", "store", "likes tea", *ALICE, "--type", "mood"], None, "memory_type"),
    (["memory", "forget", "../../x", *ALICE, "--reason", "r"], None, "not a memory id"),
    (["memories", "stats", "-a", "nosuch"], None, "unknown agent"),
    (["mcp", "-a", "nosuch"], None, "unknown agent"),
    (["forget-tenant", *ALICE], None, "--yes"),
    (["forget-tenant", "-a", "nosuch", "--yes"], None, "unknown agent 'nosuch': nothing of it is in the workspace, the memory or the instance"),
    (["nosuch-command"], None, "No such command"),
    (["grep", "(refund", *ALICE], None, "bad regular expression"),
    (["expand", "facts/m_nosuch", *ALICE], None, "no typed memory"),
    (["expand", "support-bot/MEMORY.md#L1", *ALICE, "--depth", "-1"], None, "--depth"),
]


def _state(world) -> tuple:
    """What a bad input must leave as it was: partitions, workspace folders, indexed tenants."""
    from memory_pipeline.l0.store import ChunkIndex

    folders = sorted(str(p.relative_to(world.root)) for p in world.root.rglob("*") if p.is_dir())
    chunks = ChunkIndex(world.lance_uri).db.open_table("chunks").search().select(["tenant"]).limit(None).to_arrow()
    return local_instance(world.dagster_home).get_dynamic_partitions(TENANTS_PARTITION), folders, set(chunks["tenant"].to_pylist())


def test_bad_input_is_one_line_exit_2_and_changes_nothing(world):
    before = _state(world)
    assert before[0] and before[2]
    for args, stdin, words in BAD_INPUTS:
        result = world.invoke(*args, input=stdin)
        assert result.exit_code == 2, (args, result.output)
        assert result.stdout == "", args
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), (args, result.stderr)
        assert words.lower() in lines[0].lower(), (args, lines[0])
        assert "Traceback" not in result.output
    assert _state(world) == before


def test_debug_shows_the_traceback_and_failures_exit_1(world, monkeypatch):
    debug = world.invoke("--debug", "search", "refund", "-a", "nosuch")
    assert debug.exit_code == 2 and "Traceback" in debug.stderr

    def broken(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(importlib.import_module("memory_pipeline.recall.search"), "search", broken)
    failed = world.invoke("search", "refund", *ALICE)
    assert failed.exit_code == 1
    assert failed.stderr == "error: RuntimeError: disk on fire (run again with --debug for the traceback)\n"


def test_every_command_that_prints_data_prints_json(world):
    """Each command's ``--json`` output parses whole, and holds what the command did."""
    tenants = world.json("tenants")
    assert {"agent": "support-bot", "user": "alice", "key": "support-bot~alice"} in tenants

    again = world.json("ingest", "-a", "support-bot", "-a", "research-assistant", "-u", "alice", "-u", "carol")
    assert again["tenants"] == ["research-assistant~alice", "research-assistant~carol", "support-bot~alice"]
    # Three tenants that are not neighbours among the partitions: one run each, all summed up.
    assert len(again["runs"]) == 3 and again["success"]
    assert again["assets"]["memory_chunks"]["files_unchanged"] >= 3
    assert again["assets"]["memory_chunks"]["files_new"] == 0

    hits = world.json("search", "refund for annual plans", *ALICE, "--limit", "2")
    assert hits and len(hits) <= 2 and {"citation", "score", "snippet", "source"} <= set(hits[0])
    lines = world.json("get", hits[0]["citation"], *ALICE)
    assert lines["text"] and lines["path"] == hits[0]["path"]
    expanded = world.json("expand", hits[0]["citation"], *ALICE, "--all-levels")
    assert expanded["text"] == lines["text"] and "sources" in expanded
    found = world.json("grep", "refund", *ALICE, "--limit", "2", "-i")
    assert len(found["matches"]) == 2 and found["truncated"] is True
    injected = world.json("inject", "Can I get a refund on my annual plan?", *ALICE)
    assert injected["matched"] >= 1

    episodes = world.json("episodes", *ALICE)
    assert [e["completed_at"][:10] for e in episodes] == ["2026-10-26"] and episodes[0]["abstract"]
    flushed = world.json("flush", *ALICE, input='[{"role": "user", "content": "I prefer invoices by email from now on."}]')
    assert flushed["lines_added"] == 1 and flushed["path"].endswith(".md")

    stored = world.json("memory", "store", "Prefers invoices by email", *ALICE, "--type", "preference")
    assert stored["memory_type"] == "preference" and stored["id"].startswith("m_")
    updated = world.json("memory", "update", stored["id"], *ALICE, "--confidence", "0.9", "--reason", "confirmed")
    assert updated["confidence"] == 0.9
    assert [m["id"] for m in world.json("memories", "query", *ALICE, "--type", "preference")] == [stored["id"]]
    assert world.json("memories", "search", "invoices by email", *ALICE)[0]["id"] == stored["id"]
    assert world.json("memories", "stats", *ALICE)["by_type"]["preference"] == 1
    assert world.json("memories", "bulletin", "memory", *ALICE)["markdown"].count("Prefers invoices by email") == 1
    assert world.json("memories", "entity", "Alice", *ALICE)["entity"] == "Alice"
    assert world.json("memory", "forget", stored["id"], *ALICE, "--reason", "test")["forgotten"] is True
    assert world.json("memory", "skip", "It rained", *ALICE, "--reason", "small talk")["skipped"] is True

    forgotten = world.json("forget-tenant", "-a", "research-assistant", "-u", "carol", "--yes")
    assert forgotten["tenants"] == ["research-assistant~carol"] and forgotten["rows_deleted"]["chunks"] > 0


def test_the_pipeline_reports_progress_as_the_summary_counts(world):
    """What the progress bars showed during the first ingest adds up to the run's own figures."""
    chunks = world.first_ingest["assets"]["memory_chunks"]
    embedded = world.first_ingest["assets"]["memory_embeddings"]["embeddings_computed"]
    assert embedded > 0
    assert dict(world.reported) == {"files read": chunks["files_seen"], "chunks embedded": embedded}


def test_json_is_offered_by_every_command_that_prints_data():
    """A new command that prints data without ``--json`` fails here."""
    import typer.main

    from memory_pipeline.cli import app

    def leaves(command, path=()):
        for name, sub in getattr(command, "commands", {}).items():
            yield from leaves(sub, (*path, name))
        if not getattr(command, "commands", None):
            yield " ".join(path), {opt for p in command.params for opt in p.opts}

    commands = dict(leaves(typer.main.get_command(app)))
    assert commands
    without = sorted(name for name, opts in commands.items() if "--json" not in opts)
    assert without == ["demo", "mcp"]  # a show for people, and a server speaking MCP on stdout


def test_a_pasted_page_is_quoted_by_its_start(world):
    """A query of 20,000 characters (or a pattern of 300, grep's limit) comes back in the answer's
    line as its start and an ellipsis (before, the whole of it was printed again)."""
    page = "zqxj " * 4_000
    for args in (("search", page, *ALICE, "--min-score", "0.99"), ("memories", "search", page, *ALICE),
                 ("grep", page[:300], *ALICE)):
        result = world.invoke(*args)
        assert result.exit_code == 0, (args[:2], result.output[:300])
        assert len(result.stdout) < 400 and "zqxj zqxj" in result.stdout and "…'" in result.stdout, result.stdout[:500]
