"""Maintenance: the prune job deletes episodes past expires_at (their vectors are in the same rows)
and keeps the others; the schedule runs it every 6 hours."""

from datetime import timedelta

from memory_pipeline.consolidation.schedules import prune_episodes_job, prune_episodes_schedule
from memory_pipeline.orchestration.resources import EmbedderResource, LanceDBResource
from memory_pipeline_tests.helpers.consolidation import ALICE, NOW, add_episodes, store_for


def test_prune_deletes_only_expired_episodes(lance_uri, instance):
    store = store_for(lance_uri)
    add_episodes(store, ALICE, 3)
    rows = store.episode_rows(ALICE)
    expired = rows["id"][0]
    store.episodes().update(where=f"id = '{expired}'", values={"expires_at": NOW - timedelta(days=400)})
    result = prune_episodes_job.execute_in_process(
        instance=instance,
        resources={"lancedb": LanceDBResource(uri=lance_uri), "embedder": EmbedderResource(kind="hash")},
    )
    assert result.success and result.output_for_node("prune_expired_episodes") == 1
    left = store.episode_rows(ALICE)["id"].to_list()
    assert expired not in left and len(left) == 2
    assert prune_episodes_schedule.cron_schedule == "0 */6 * * *"
