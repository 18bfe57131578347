"""Partition definitions of consolidation (names are stable: they live in the instance).

Consolidation is partitioned by tenant with sessions, the set dreaming and the compaction flush
use: the partitions grow with the tenants, never with the days. A run chooses the sessions it
consolidates itself (``ConsolidationScope``: by default those not consolidated yet), so a rerun or
a backfill of a tenant writes the same rows, and a run over many tenants is one range of this set.

Until this version consolidation was partitioned by day x tenant: 1,320 partitions for 4 tenants
after 330 days, a range run materialized every day between two sessions (66 day partitions for 17
sessions, the empty ones without figures), and a run covered one tenant only. An instance that
holds those materializations keeps them in its event log under the same asset keys; their keys
("2026-11-16|bot~ann") are no partitions of this set, so the UI counts them in no partition's
status and lists them only in the asset's history.
"""

from memory_pipeline.orchestration.partitions import session_tenant_partitions

consolidation_partitions = session_tenant_partitions
"""One partition per tenant with sessions (``<agent>~<user>``)."""
