"""``get`` returns exact lines of files in the reader's scope and refuses everything else.

Refused: absolute paths, ``..``, symlinks that lead out of the tenant or the workspace, other
users' and other agents' files. Accepted: own user files, agent-wide files, a team leader's
files for a member, and a whole citation ``path#Lstart-Lend``.
"""

from __future__ import annotations

import os

import pytest

from memory_pipeline.recall.get import AccessDeniedError, GetError, get
from memory_pipeline_tests.helpers import write
from memory_pipeline_tests.helpers.recall import build_workspace, recall_settings


@pytest.fixture
def workspace(tmp_path):
    root = tmp_path / "agents"
    build_workspace(root)
    write(root, "support-bot/users/alice/memory/lines.md", "one\ntwo\nthree\nfour\nfive\n")
    (tmp_path / "outside.md").write_text("secret outside the root\n")
    return root, recall_settings(root, str(tmp_path / "lancedb"))


def test_exact_lines_from_own_file(workspace):
    root, settings = workspace
    got = get("support-bot/users/alice/memory/lines.md", 2, 3, agent="support-bot", user="alice", settings=settings)
    assert got.lines == ["two", "three", "four"]
    assert (got.start_line, got.end_line, got.total_lines) == (2, 4, 5)
    assert got.citation == "support-bot/users/alice/memory/lines.md#L2-L4"
    assert get("support-bot/users/alice/memory/lines.md", 4, agent="support-bot", user="alice", settings=settings).lines == ["four", "five"]


def test_a_citation_is_a_valid_path(workspace):
    _, settings = workspace
    got = get("support-bot/users/alice/memory/lines.md#L3-L4", agent="support-bot", user="alice", settings=settings)
    assert got.lines == ["three", "four"]


def test_agent_wide_and_leader_files_are_readable(workspace):
    _, settings = workspace
    assert get("support-bot/MEMORY.md", agent="support-bot", user="alice", settings=settings).lines[0] == "# Policies"
    assert get("support-bot/MEMORY.md", agent="helper-bot", user="alice", settings=settings).tenant == "support-bot~_global"


@pytest.mark.parametrize(
    "path, message",
    [
        ("/etc/passwd", "absolute path"),
        ("support-bot/users/alice/../bob/MEMORY.md", "'..'"),
        ("../outside.md", "'..'"),
        ("support-bot/users/bob/MEMORY.md", "not in the memory"),
        ("research-bot/users/alice/MEMORY.md", "not in the memory"),
        ("helper-bot/MEMORY.md", "not in the memory"),
        ("support-bot/sessions/bob/s1.jsonl", "not in the memory"),
    ],
)
def test_paths_outside_the_scope_are_refused(workspace, path, message):
    _, settings = workspace
    with pytest.raises(AccessDeniedError, match=message):
        get(path, agent="support-bot", user="alice", settings=settings)


def test_symlinks_leading_out_are_refused(workspace, tmp_path):
    root, settings = workspace
    alice = root / "support-bot/users/alice/memory"
    os.symlink(tmp_path / "outside.md", alice / "escape.md")
    os.symlink(root / "support-bot/users/bob/MEMORY.md", alice / "bob.md")
    os.symlink(root / "support-bot/users/bob", alice / "bobdir")
    for name in ("escape.md", "bob.md", "bobdir/MEMORY.md"):
        with pytest.raises(AccessDeniedError, match="symlink"):
            get(f"support-bot/users/alice/memory/{name}", agent="support-bot", user="alice", settings=settings)


def test_missing_files_and_bad_ranges_say_what_is_wrong(workspace):
    _, settings = workspace
    with pytest.raises(GetError, match="no file"):
        get("support-bot/users/alice/nope.md", agent="support-bot", user="alice", settings=settings)
    for cited in ("lines.md#Lx", "lines.md#L3-x", "lines.md#L"):  # a citation mistyped: its range is named
        with pytest.raises(GetError, match=r"'#L.*' is no line range: a citation ends in #L<from>"):
            get(f"support-bot/users/alice/memory/{cited}", agent="support-bot", user="alice", settings=settings)
    with pytest.raises(GetError, match="past its end"):
        get("support-bot/users/alice/memory/lines.md", 99, agent="support-bot", user="alice", settings=settings)
    with pytest.raises(GetError, match="from_line"):
        get("support-bot/users/alice/memory/lines.md", 0, agent="support-bot", user="alice", settings=settings)
