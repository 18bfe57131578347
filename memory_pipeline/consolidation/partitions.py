"""Partition definitions of consolidation (names are stable: they live in the instance)."""

import dagster as dg

from memory_pipeline.config import get_settings
from memory_pipeline.orchestration.partitions import session_tenant_partitions

DAY = "day"
TENANT = "tenant"
FIRST_DAY = get_settings().first_day
"""``MEMORY_PIPELINE_FIRST_DAY``: a recent start keeps the partition space to the days that can
hold sessions (from 2020 it was 15,000 partitions, nearly all "missing" for ever)."""

day_partitions = dg.DailyPartitionsDefinition(start_date=FIRST_DAY, end_offset=1)
"""Days in UTC; ``end_offset=1`` so today, where sessions are completing, has a partition."""

consolidation_partitions = dg.MultiPartitionsDefinition({DAY: day_partitions, TENANT: session_tenant_partitions})
"""One partition per (day of session completion, tenant with sessions)."""


def consolidation_key(day: str, tenant_key: str) -> dg.MultiPartitionKey:
    return dg.MultiPartitionKey({DAY: day, TENANT: tenant_key})
