"""Schedules built by ``utc_schedule``: the cron is read in UTC, the schedule starts in the state
``MEMORY_PIPELINE_AUTOMATION`` gives (stopped by default), and both maintenance schedules take
their cron from the settings."""

from memory_pipeline.config import get_settings
from memory_pipeline.consolidation.schedules import prune_episodes_job, prune_episodes_schedule
from memory_pipeline.l0.schedules import lancedb_optimize_job, lancedb_optimize_schedule
from memory_pipeline.orchestration.automation import schedule_status
from memory_pipeline.orchestration.cron import utc_schedule


def test_utc_schedule_fields():
    schedule = utc_schedule("every_minute_schedule", lancedb_optimize_job, "* * * * *", "Runs every minute.")
    assert (schedule.name, schedule.job_name, schedule.cron_schedule) == (
        "every_minute_schedule", "lancedb_optimize_job", "* * * * *"
    )
    assert schedule.execution_timezone == "UTC"
    assert schedule.default_status == schedule_status()
    assert schedule.description == "Runs every minute."


def test_maintenance_schedules_follow_the_settings():
    settings = get_settings()
    assert (lancedb_optimize_schedule.name, lancedb_optimize_schedule.job_name) == (
        "lancedb_optimize_schedule", lancedb_optimize_job.name
    )
    assert lancedb_optimize_schedule.cron_schedule == settings.optimize_cron
    assert (prune_episodes_schedule.name, prune_episodes_schedule.job_name) == (
        "prune_episodes_schedule", prune_episodes_job.name
    )
    assert prune_episodes_schedule.cron_schedule == settings.prune_cron
    for schedule in (lancedb_optimize_schedule, prune_episodes_schedule):
        assert schedule.execution_timezone == "UTC"
        assert schedule.default_status == schedule_status()
