"""Partition definitions, shared by assets, sensors and jobs (names are stable: they live in the instance)."""

import dagster as dg

TENANTS_PARTITION = "tenants"

tenant_partitions = dg.DynamicPartitionsDefinition(name=TENANTS_PARTITION)
"""One partition per tenant, keyed ``<agent>~<user>`` (see ``memory_pipeline.tenancy``)."""
