"""The state sensors and schedules start in: stopped unless the deployment says otherwise.

A first ``dagster dev`` on a workspace with many tenants would otherwise request an index run
per tenant, a consolidation run per completed session and the maintenance jobs at once. The
default state only applies until someone switches a sensor or schedule (in the UI, with
``dagster sensor start``/``stop`` or ``dagster schedule start``/``stop``): the instance keeps that
choice from then on.
"""

import dagster as dg

from memory_pipeline.config import get_settings


def sensor_status() -> dg.DefaultSensorStatus:
    """``MEMORY_PIPELINE_AUTOMATION``: ``stopped`` (the default) or ``running``."""
    running = get_settings().automation == "running"
    return dg.DefaultSensorStatus.RUNNING if running else dg.DefaultSensorStatus.STOPPED


def schedule_status() -> dg.DefaultScheduleStatus:
    running = get_settings().automation == "running"
    return dg.DefaultScheduleStatus.RUNNING if running else dg.DefaultScheduleStatus.STOPPED
