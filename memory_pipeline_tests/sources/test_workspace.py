"""The workspace scan: tenants from the folder layout, include/exclude, and what it refuses.

Proves: the agent-wide and per-user tenants are found with the right files; non-memory files are
recorded as 'other'; memory.md is only a fallback for MEMORY.md; symlinks out of the root and
invalid tenant folders are skipped with reasons; a missing root is a skip, not an error; a file
that vanishes between scan and read is reported, not raised.
"""

from __future__ import annotations

import os

from memory_pipeline.sources.workspace import read_text_file, scan_workspace, tenant_fingerprint
from memory_pipeline.tenancy import Tenant
from memory_pipeline_tests.helpers import write


def kinds(scan, tenant):
    return {f.scope_path: f.kind for f in scan.files[tenant]}


def test_tenants_and_kinds(root):
    write(root, "bot/MEMORY.md", "# Bot")
    write(root, "bot/memory/2026-01-02.md", "# Day")
    write(root, "bot/memory/diagram.png", b"\x89PNG")
    write(root, "bot/users/alice/memory.md", "# lower")
    write(root, "bot/users/alice/MEMORY.md", "# upper")
    write(root, "bot/users/alice/memory/.draft.md", "# hidden")
    write(root, "bot/sessions/alice/s1.jsonl", "{}")
    write(root, "bot/sessions/alice/notes.txt", "x")
    scan = scan_workspace(root)
    assert scan.tenants == [Tenant("bot"), Tenant("bot", "alice")]
    assert kinds(scan, Tenant("bot")) == {
        "MEMORY.md": "memory",
        "memory/2026-01-02.md": "memory",
        "memory/diagram.png": "other",
    }
    assert kinds(scan, Tenant("bot", "alice")) == {
        "MEMORY.md": "memory",
        "memory.md": "other",
        "memory/.draft.md": "other",
        "sessions/alice/s1.jsonl": "sessions",
        "sessions/alice/notes.txt": "other",
    }
    paths = {f.path for f in scan.files[Tenant("bot", "alice")]}
    assert "bot/sessions/alice/s1.jsonl" in paths and "bot/users/alice/MEMORY.md" in paths


def test_memory_md_fallback_when_upper_absent(root):
    write(root, "bot/users/bob/memory.md", "# lower")
    scan = scan_workspace(root)
    assert kinds(scan, Tenant("bot", "bob")) == {"memory.md": "memory"}


def test_refusals(root, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.md").write_text("secret")
    write(root, "bot/MEMORY.md", "# Bot")
    os.symlink(outside / "x.md", root / "bot" / "escape.md")
    os.symlink(outside, root / "bot" / "memory")
    write(root, "bad agent!/MEMORY.md", "# nope")
    write(root, "bot/users/..hidden/MEMORY.md", "# nope")
    scan = scan_workspace(root)
    reasons = dict(scan.skipped)
    assert reasons["bot/escape.md"] == "symlink leads outside the workspace root"
    assert "bot/memory" in reasons
    assert "invalid agent id 'bad agent!'" in reasons["bad agent!"]
    assert any("..hidden" in path for path in reasons)
    assert [f.scope_path for f in scan.files[Tenant("bot")]] == ["MEMORY.md"]


def test_missing_root(tmp_path):
    scan = scan_workspace(tmp_path / "absent")
    assert scan.files == {} and scan.skipped[0][1] == "workspace root does not exist"


def test_fingerprint_moves_with_content(root):
    path = write(root, "bot/MEMORY.md", "# Bot")
    before = tenant_fingerprint(scan_workspace(root).files[Tenant("bot")])
    path.write_text("# Bot, edited")
    after = tenant_fingerprint(scan_workspace(root).files[Tenant("bot")])
    assert before != after


def test_read_text_file_reasons(root):
    assert read_text_file(root / "gone.md", 1000).reason == "file vanished before it could be read"
    big = write(root, "big.md", "x" * 2000)
    assert "over the" in read_text_file(big, 1000).reason
    bom = write(root, "bom.md", "\ufeff# Title\n".encode())
    assert read_text_file(bom, 1000).text == "# Title\n"
