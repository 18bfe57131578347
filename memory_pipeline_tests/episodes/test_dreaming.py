"""dreaming: the tenant's oldest unpromoted episodes (at most 10) become a cited Markdown file in
``memory/_system/dreaming/``; they are marked promoted; a second run the same day merges without
repeating a line; human-written files, including one at the dreaming path, are never touched."""

import re
from datetime import UTC, datetime

from memory_pipeline.consolidation.assets import episodic_summaries
from memory_pipeline.episodes.dreaming import MARKER, SECTIONS, Line, write_document
from memory_pipeline.tenancy import Tenant
from memory_pipeline_tests.helpers import make_resources, write
from memory_pipeline_tests.helpers.consolidation import (
    ALICE,
    ALICE_DAYS,
    consolidate,
    dreamed_path,
    human_files,
    jsonl,
    metadata,
    run_dreaming,
    say,
    store_for,
)

CITATION = re.compile(r" \[[\w.-]+ · [\w./~-]+\.jsonl#L\d+(?:-L\d+)?\]$")


def test_dreaming_writes_cited_sections_and_promotes(sample_root, lance_uri, instance):
    res = make_resources(sample_root, lance_uri)
    for day in ALICE_DAYS:
        consolidate(instance, res, day, assets=[episodic_summaries])
    before = human_files(sample_root)
    result = run_dreaming(instance, res)
    assert result.success
    path = dreamed_path(sample_root)
    text = path.read_text()
    assert text.startswith(MARKER)
    for section in SECTIONS:
        assert f"\n## {section}\n" in text
    bullets = [line for line in text.splitlines() if line.startswith("- ")]
    assert bullets and all(CITATION.search(line) for line in bullets)
    assert any("dark mode" in line for line in bullets)
    decisions = text.split("## Key decisions")[1]
    assert "PostgreSQL 16" in decisions
    assert "sess-20261111-tw04" in text and "#L1" in text
    meta = metadata(result, "dreaming")
    assert meta["episodes_promoted"] == 5 and meta["lines_added"] == len(bullets)
    assert store_for(lance_uri).episode_rows(ALICE, "promoted_at IS NULL").height == 0
    assert human_files(sample_root) == before
    again = run_dreaming(instance, res)  # nothing unpromoted: the file stays as it is
    assert metadata(again, "dreaming")["episodes_promoted"] == 0 and path.read_text() == text


def test_second_run_same_day_merges_without_duplicates(root, lance_uri, instance):
    res = make_resources(root, lance_uri)
    for i, day in enumerate(("2026-10-01", "2026-10-02")):
        write(root, f"bot/sessions/ann/s{i}.jsonl", jsonl(
            say("user", "I prefer short answers with code samples.", f"{day}T09:00:00Z"),
            say("user", f"We decided to move the Falcon service to Kubernetes in phase {i}.", f"{day}T09:01:00Z"),
            completed=f"{day}T09:05:00Z",
        ))
        consolidate(instance, res, day, tenant="bot~ann", assets=[episodic_summaries])
        run_dreaming(instance, res, tenant="bot~ann")
    text = dreamed_path(root, "bot", "ann").read_text()
    bullets = [line for line in text.splitlines() if line.startswith("- ")]
    keys = [CITATION.sub("", line).casefold() for line in bullets]
    assert len(keys) == len(set(keys))
    assert sum("short answers" in line for line in bullets) == 1  # said in both sessions, kept once
    assert "phase 0" in text and "phase 1" in text


def test_at_most_ten_oldest_episodes_per_run(root, lance_uri, instance):
    res = make_resources(root, lance_uri)
    for i in range(12):
        day = f"2026-10-{i + 1:02d}"
        write(root, f"bot/sessions/ann/s{i:02d}.jsonl", jsonl(
            say("user", f"Note {i}: the Falcon deployment number {i} went fine.", f"{day}T09:00:00Z"), completed=f"{day}T09:05:00Z"
        ))
    consolidate(instance, res, None, tenant="bot~ann", assets=[episodic_summaries])  # all twelve in one run
    first = run_dreaming(instance, res, tenant="bot~ann")
    assert metadata(first, "dreaming")["episodes_promoted"] == 10
    pending = store_for(lance_uri).episode_rows("bot~ann", "promoted_at IS NULL")
    assert sorted(pending["session_id"].to_list()) == ["s10", "s11"]
    assert metadata(run_dreaming(instance, res, tenant="bot~ann"), "dreaming")["episodes_promoted"] == 2


def test_human_written_file_at_the_dreaming_path_is_left_alone(sample_root, lance_uri, instance):
    res = make_resources(sample_root, lance_uri)
    consolidate(instance, res, ALICE_DAYS[0], assets=[episodic_summaries])
    path = dreamed_path(sample_root)
    write(sample_root, path.relative_to(sample_root).as_posix(), "# My own notes\n\n- keep me\n")
    result = run_dreaming(instance, res)
    assert result.success
    assert path.read_text() == "# My own notes\n\n- keep me\n"
    assert metadata(result, "dreaming")["refused_human_files"] == 1
    assert store_for(lance_uri).episode_rows(ALICE, "promoted_at IS NULL").height == 1


def test_write_document_for_the_global_tenant(root):
    tenant = Tenant("bot")
    day = datetime(2026, 11, 20, tzinfo=UTC)
    from memory_pipeline.episodes.dreaming import dreaming_path

    path = dreaming_path(root, tenant, day)
    assert path == root / "bot" / "memory" / "_system" / "dreaming" / "20261120-consolidated.md"
    lines = [Line("Preferences", "Likes tea.", "[s1 · bot/sessions/x/s1.jsonl#L2]")]
    first = write_document(path, tenant, day, lines, "extractive")
    second = write_document(path, tenant, day, [*lines, Line("Key decisions", "Ship it.", "[s2 · bot/sessions/x/s2.jsonl#L1]")], "extractive")
    assert (first.lines_added, second.lines_added, second.lines_total) == (1, 1, 2)
