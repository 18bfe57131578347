"""Schedules on a cron from the settings, read in UTC, in the default state of automation.

Every maintenance schedule of the pipeline has this shape; only the job, the cron and the words
differ, so a deployment reads all of them the same way (``MEMORY_PIPELINE_*_CRON``, UTC).
"""

import dagster as dg

from memory_pipeline.orchestration.automation import schedule_status


def utc_schedule(name: str, job: dg.JobDefinition, cron: str, description: str) -> dg.ScheduleDefinition:
    """A schedule that runs ``job`` on ``cron`` (UTC), stopped unless ``MEMORY_PIPELINE_AUTOMATION=running``."""
    return dg.ScheduleDefinition(
        name=name,
        job=job,
        cron_schedule=cron,
        execution_timezone="UTC",
        default_status=schedule_status(),
        description=description,
    )
