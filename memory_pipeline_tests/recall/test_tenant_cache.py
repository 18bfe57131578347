"""The recall cache re-reads a tenant only when its own rows changed."""

from __future__ import annotations

from memory_pipeline.recall.sources import ChunkSource, TenantCache
from memory_pipeline_tests.helpers import write
from memory_pipeline_tests.helpers.recall import indexed_workspace, ingest

ALICE, BOB = "support-bot~alice", "support-bot~bob"


def test_another_tenants_write_keeps_the_cached_rows_and_an_own_write_reloads(tmp_path):
    root, uri = indexed_workspace(tmp_path)
    cache = TenantCache(uri, fingerprint_min_rows=1)  # every tenant counts as large here
    small = TenantCache(uri)  # the default: tenants this small are always re-read
    source = ChunkSource()
    alice, alice_small = cache.rows(source, ALICE), small.rows(source, ALICE)
    assert alice.fingerprint and alice.text_index() is not None
    version = cache.table("chunks").version

    write(root, "support-bot/users/bob/memory/tea.md", "# Tea\n\nBob drinks green tea at four.\n")
    ingest(root, uri)
    assert cache.table("chunks").version > version
    assert cache.rows(source, ALICE) is alice  # bob's write: alice's rows and indices are kept
    assert small.rows(source, ALICE) is not alice_small
    assert any("green tea" in t for t in cache.rows(source, BOB).text)

    write(root, "support-bot/users/alice/memory/tea.md", "# Tea\n\nAlice drinks black coffee at nine.\n")
    ingest(root, uri)
    fresh = cache.rows(source, ALICE)
    assert fresh is not alice and any("black coffee" in t for t in fresh.text)
    assert fresh.fingerprint != alice.fingerprint
    hits = cache.text_hits(source, [ALICE], ["memory"], "coffee", 5)
    assert hits and all(tenant == ALICE for tenant, _ in hits)

    (root / "support-bot/users/alice/memory/tea.md").unlink()
    ingest(root, uri)
    assert not any("black coffee" in t for t in cache.rows(source, ALICE).text)


def test_a_tenant_read_is_kept_in_memory_until_its_table_moves(tmp_path):
    root, uri = indexed_workspace(tmp_path)
    cache = TenantCache(uri)
    first = cache.read_tenant("chunks", ALICE, ["path", "text"])
    assert first.num_rows and cache.read_tenant("chunks", ALICE, ["path", "text"]) is first  # no second read

    write(root, "support-bot/users/alice/memory/tea.md", "# Tea\n\nAlice drinks black coffee at nine.\n")
    ingest(root, uri)
    fresh = cache.read_tenant("chunks", ALICE, ["path", "text"])
    assert fresh is not first and any("black coffee" in t for t in fresh.column("text").to_pylist())
