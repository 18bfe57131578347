"""Proves: on the sample workspace, after consolidation, dreaming and typed-memory extraction ran
through the real pipelines, ``expand`` reaches the source from every summary: each line of every
dreamed file down to exactly the turns it cites (through the episode holding them), each typed
memory and each relation down to the turn or note line it was read from, with that line's text.
On the same runs, every consolidation check runs on its own and passes, materializing nothing.
"""

from __future__ import annotations

import dagster as dg
import pytest

from memory_pipeline.consolidation import defs as consolidation
from memory_pipeline.consolidation.launch import completed_tenants, run_consolidation, run_dreaming, tenants_to_dream
from memory_pipeline.embedding import HashEmbedder
from memory_pipeline.memories.operations import TypedMemories
from memory_pipeline.memories.pipeline import ingest_tenant
from memory_pipeline.orchestration.runs import discover_tenants
from memory_pipeline.recall.expand import _CITED_RE, expand
from memory_pipeline.recall.get import get, parse_citation
from memory_pipeline.store.base import LanceBase
from memory_pipeline.store.tables import MEMORIES, RELATIONS
from memory_pipeline.tenancy import Tenant
from memory_pipeline_tests.helpers import copy_sample, make_resources
from memory_pipeline_tests.helpers.recall import recall_settings

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    base = tmp_path_factory.mktemp("expand")
    root, lance_uri = base / "agents", str(base / "lancedb")
    copy_sample(root)
    instance = dg.DagsterInstance.ephemeral()
    defs = dg.Definitions(assets=consolidation.ASSETS, jobs=consolidation.JOBS, resources=make_resources(root, lance_uri))
    run_consolidation(defs, instance, completed_tenants(root, 30))
    dreamers = sorted(tenants_to_dream(lance_uri, HashEmbedder().dim))
    assert dreamers == ["support-bot~alice"]  # the only tenant with five sessions
    run_dreaming(defs, instance, dreamers)
    typed = TypedMemories.open(lance_uri, HashEmbedder())
    for tenant in discover_tenants(root):
        ingest_tenant(typed, root, Tenant.from_key(tenant))
    return root, recall_settings(root, lance_uri), defs, instance


@pytest.fixture(scope="module")
def sample(pipeline):
    return pipeline[:2]


def _line_text(citation: str, tenant: Tenant, settings) -> str:
    return get(citation, agent=tenant.agent_id, user=tenant.user_id, settings=settings).text


def test_every_dreamed_line_reaches_the_turns_it_cites(sample):
    root, settings = sample
    walked = 0
    for path in sorted(root.rglob("_system/dreaming/*.md")):
        rel = path.relative_to(root).as_posix()
        tenant = Tenant(rel.split("/")[0], rel.split("/")[2])
        for number, line in enumerate(path.read_text().splitlines(), 1):
            cited = _CITED_RE.search(line)
            if not cited:
                continue
            source, start, count = parse_citation(cited["cite"])
            wanted = [(f"{source}#L{n}", "turn") for n in range(start, start + count)]
            unit = expand(f"{rel}#L{number}", agent=tenant.agent_id, user=tenant.user_id, depth=None, settings=settings)
            assert [s.kind for s in unit.sources] == ["episode"], line  # every cited session still has its episode
            assert [(leaf.citation, leaf.kind) for leaf in unit.leaves()] == wanted, line
            walked += 1
    assert walked >= 20


def test_every_typed_memory_and_relation_reaches_its_statement(sample):
    root, settings = sample
    base = LanceBase(settings.lancedb_uri)
    memories = base.read(MEMORIES, columns=["id", "tenant", "source_ref"]).to_dicts()
    relations = base.read(RELATIONS, columns=["id", "tenant", "path", "line"]).to_dicts()
    assert len(memories) >= 100 and len(relations) >= 20
    for unit, ref in [*((f"facts/{m['id']}", m["source_ref"]) for m in memories),
                      *((f"relations/{r['id']}", f"{r['path']}#L{r['line']}") for r in relations)]:
        row_tenant = next(m["tenant"] for m in [*memories, *relations] if unit.endswith(m["id"]))
        tenant = Tenant.from_key(row_tenant)
        kind = "turn" if ref.split("#")[0].endswith(".jsonl") else "note_lines"
        leaves = expand(unit, agent=tenant.agent_id, user=tenant.user_id, depth=None, settings=settings).leaves()
        assert [(leaf.citation, leaf.kind) for leaf in leaves] == [(ref, kind)], unit
        if kind == "note_lines":
            assert leaves[0].text == _line_text(ref, tenant, settings)


def test_every_consolidation_check_runs_on_its_own(pipeline):
    _, _, defs, instance = pipeline
    job = defs.resolve_implicit_global_asset_job_def()
    checked = 0
    for assets_def in consolidation.ASSETS:
        keys = set(getattr(assets_def, "check_keys", ()))
        if not keys:
            continue
        asset = next(iter(keys)).asset_key
        before = len(instance.fetch_materializations(asset, limit=1000).records)
        alone = job.get_subset(asset_selection=set(), asset_check_selection=keys)
        result = alone.execute_in_process(instance=instance, partition_key="support-bot~alice")
        evaluations = [e.event_specific_data for e in result.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"]
        assert evaluations and all(e.passed for e in evaluations), (asset, evaluations)
        assert len(instance.fetch_materializations(asset, limit=1000).records) == before
        checked += len(keys)
    assert checked == 4  # episodes, relations, entities, dreamed files
