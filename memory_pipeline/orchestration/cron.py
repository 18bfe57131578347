"""Schedules on a cron from the settings, read in UTC and running as soon as the daemon starts.

Every maintenance schedule of the pipeline has this shape; only the job, the cron and the words
differ, so a deployment reads all of them the same way (``MEMORY_PIPELINE_*_CRON``, UTC).
"""

import dagster as dg


def utc_schedule(name: str, job: dg.JobDefinition, cron: str, description: str) -> dg.ScheduleDefinition:
    """A schedule that runs ``job`` on ``cron`` (UTC), on by default."""
    return dg.ScheduleDefinition(
        name=name,
        job=job,
        cron_schedule=cron,
        execution_timezone="UTC",
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description=description,
    )
