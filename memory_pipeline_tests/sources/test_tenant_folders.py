"""Proves: a folder that cannot be a tenant is reported with its reason, never silently dropped,
and never stored; skip counts match the skips listed; only valid folders are offered as known users.

Folders with invalid agent or user ids, and folders or files whose names hold a secret, are
skipped by the one workspace scanner with a reason (the secret itself redacted in it); the L0
run reports them in its metadata and ``ingest`` prints them; ``files_skipped`` counts every file
skip the run lists, a symlink the scan refused included; the other tenants are indexed.
"""

from __future__ import annotations

import json
import os

import dagster as dg
import pytest
from typer.testing import CliRunner

from memory_pipeline.config import get_settings
from memory_pipeline.l0.assets import l0_assets, l0_index_job
from memory_pipeline.sources.workspace import GLOBAL_FOLDER_REASON, scan_workspace, tenant_folder_skips
from memory_pipeline.tenancy import UnknownTenantError, known_tenant
from memory_pipeline_tests.cli_env import cli_app
from memory_pipeline_tests.helpers import make_resources, write
from memory_pipeline_tests.secret_corpus import corpus

TOKEN = next(p for p in corpus(3) if p.name == "github_classic").secrets[0]


def _workspace(root) -> None:
    write(root, "bot/users/ann/MEMORY.md", "# Ann\n\nAnn likes tea.\n")
    write(root, "bot/users/bad user/MEMORY.md", "# invalid id\n")
    write(root, f"bot/users/{TOKEN}/MEMORY.md", "# a token as a user id\n")
    write(root, f"bot/users/ann/memory/{TOKEN}.md", "# a token as a file name\n")
    write(root, "bad agent!/MEMORY.md", "# invalid agent id\n")
    write(root, "other/MEMORY.md", "# other agent\n")
    os.symlink(root / "other/MEMORY.md", root / "bot/users/ann/memory/link.md")


def test_every_unusable_folder_is_listed_with_a_reason(root):
    _workspace(root)
    skips = dict(tenant_folder_skips(root))
    assert set(skips) == {"bad agent!", "bot/users/bad user", "bot/users/[REDACTED:github_token]"}
    assert "invalid agent id" in skips["bad agent!"] and "invalid user id" in skips["bot/users/bad user"]
    assert skips["bot/users/[REDACTED:github_token]"].startswith("the name holds a secret (1 redacted)")
    scan = scan_workspace(root)
    assert sorted(t.key for t in scan.tenants) == ["bot~ann", "other~_global"]
    assert TOKEN not in json.dumps(scan.skipped) and TOKEN not in json.dumps(
        [f.path for files in scan.files.values() for f in files]
    )


def test_the_l0_run_and_ingest_report_them_and_count_every_skip(root, tmp_path, monkeypatch):
    _workspace(root)
    lance_uri = str(tmp_path / "lancedb")
    defs = dg.Definitions(assets=l0_assets, jobs=[l0_index_job], resources=make_resources(root, lance_uri))
    app = cli_app(monkeypatch, root, lance_uri, tmp_path / "dagster", defs)
    try:
        result = CliRunner().invoke(app, ["ingest", "--all", "--json"])
        text = CliRunner().invoke(app, ["ingest", "--all"])
    finally:
        get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert TOKEN not in result.stdout and TOKEN not in text.stdout
    assert {s["path"] for s in summary["tenant_folders_skipped"]} == {
        "bad agent!", "bot/users/bad user", "bot/users/[REDACTED:github_token]"
    }
    chunks = summary["assets"]["memory_chunks"]
    assert chunks["tenant_folders_skipped"] == 3
    assert chunks["files_skipped"] == 2  # the file named after a token, the symlink to another agent
    assert "skipped folder bot/users/bad user: invalid user id" in " ".join(text.stdout.split())


def test_global_user_folders_are_reported_and_invalid_folders_are_no_known_users(root, monkeypatch):
    """``users/_global/`` and ``sessions/_global/`` were ignored with no word; an invalid folder
    (``x~y``) was offered as a known user in the unknown-user error."""

    write(root, "bot/MEMORY.md", "# Bot\n\nThe bot answers in French.\n")
    write(root, "bot/users/ann/MEMORY.md", "# Ann\n\nAnn likes tea.\n")
    write(root, "bot/users/_global/MEMORY.md", "# misplaced agent-wide notes\n")
    write(root, "bot/sessions/_global/s1.jsonl", '{"role": "user", "content": "hi"}\n')
    write(root, "bot/users/x~y/MEMORY.md", "# invalid id\n")
    skips = dict(tenant_folder_skips(root))
    assert skips == {
        "bot/users/_global": GLOBAL_FOLDER_REASON,
        "bot/sessions/_global": GLOBAL_FOLDER_REASON,
        "bot/users/x~y": skips["bot/users/x~y"],
    }
    assert skips["bot/users/x~y"].startswith("invalid user id 'x~y'")
    assert sorted(t.key for t in scan_workspace(root).tenants) == ["bot~_global", "bot~ann"]
    with pytest.raises(UnknownTenantError) as refused:
        known_tenant(root, "bot", "Ann")
    assert str(refused.value).startswith("unknown user 'Ann' of agent 'bot': known users: _global, ann (")
