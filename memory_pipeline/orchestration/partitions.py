"""Partition definitions, shared by assets, sensors and jobs (names are stable: they live in the instance)."""

import dagster as dg

TENANTS_PARTITION = "tenants"

tenant_partitions = dg.DynamicPartitionsDefinition(name=TENANTS_PARTITION)
"""One partition per tenant, keyed ``<agent>~<user>`` (see ``memory_pipeline.tenancy``)."""

SESSION_TENANTS_PARTITION = "session_tenants"

session_tenant_partitions = dg.DynamicPartitionsDefinition(name=SESSION_TENANTS_PARTITION)
"""The tenants that have session transcripts: agent-wide tenants (``<agent>~_global``) and users
with only notes never have a session to consolidate, so consolidation and dreaming do not offer
them. Registered by the workspace and consolidation sensors."""

SESSION_TENANT_JOBS = frozenset({"consolidation_job", "dreaming_job", "compaction_flush_job"})
"""The jobs partitioned by ``session_tenant_partitions`` (names are stable: runs carry them): a
range in one of their runs names session-tenant keys (``forget_runs``)."""

LINEAGE_ONLY = dg.SpecificPartitionsPartitionMapping([])
"""For a tenant-partitioned asset that reads a session-tenant one (transcripts, flushed and dreamed
notes): the edge shows where the data comes from, without a partition dependency. An identity
mapping would make ``<agent>~_global``, which has no session, depend on a partition that does not
exist, and Dagster then refuses every backfill over all tenants."""
