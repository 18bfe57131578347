"""Partition definitions of consolidation (names are stable: they live in the instance)."""

import dagster as dg

from memory_pipeline.orchestration.partitions import tenant_partitions

DAY = "day"
TENANT = "tenant"
FIRST_DAY = "2020-01-01"

day_partitions = dg.DailyPartitionsDefinition(start_date=FIRST_DAY, end_offset=1)
"""Days in UTC; ``end_offset=1`` so today, where sessions are completing, has a partition."""

consolidation_partitions = dg.MultiPartitionsDefinition({DAY: day_partitions, TENANT: tenant_partitions})
"""One partition per (day of session completion, tenant)."""


def consolidation_key(day: str, tenant_key: str) -> dg.MultiPartitionKey:
    return dg.MultiPartitionKey({DAY: day, TENANT: tenant_key})
