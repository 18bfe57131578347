"""The ``memory_activation`` asset: each tenant's activation and tiers, aged from its access log.

Partitioned by tenant like the L0 index; the nightly schedule (``schedules.py``) requests one run
over every tenant. Each partition reports its tiers (hot, warm, cool), its events and its top
units; the decay is documented in ``decay.py``.
"""

import time
from datetime import UTC, datetime

import dagster as dg

from memory_pipeline.activation.decay import COOL_TIER, HALF_LIFE_DAYS, HOT_TIER, WARM_TIER
from memory_pipeline.activation.pipeline import tenant_activation
from memory_pipeline.orchestration.materializations import (
    PartitionReport,
    column_schema,
    fail_partition,
    layer_asset,
    md_table,
    report_partitions,
)
from memory_pipeline.orchestration.partitions import tenant_partitions
from memory_pipeline.orchestration.pools import LANCEDB_WRITE_POOL
from memory_pipeline.orchestration.resources import LanceDBResource
from memory_pipeline.store.tables import ACTIVATION

GROUP = "activation"


@layer_asset(GROUP, {"layer": "activation"})(
    partitions_def=tenant_partitions,
    kinds={"python", "lancedb"},
    pool=LANCEDB_WRITE_POOL,
    metadata={"dagster/column_schema": column_schema(ACTIVATION.name, ACTIVATION.schema()), "half_life_days": HALF_LIFE_DAYS},
)
def memory_activation(context: dg.AssetExecutionContext, lancedb: LanceDBResource):
    """Activation and tier (hot, warm, cool) of every recalled unit of each tenant, decayed from its access log."""
    started = time.perf_counter()
    now = datetime.now(UTC)
    report = PartitionReport(context.partition_keys)
    preview = []
    for key in report.partition_keys:
        try:
            done = tenant_activation(lancedb.uri, key, now)
        except Exception as exc:
            fail_partition(context, report, key, "activation not computed", exc)
            continue
        preview += [[key, a.row_id, f"{a.activation:.3f}", a.tier, a.used, a.returned] for a in done.top]
        report.add(key, {
            "events": done.events, "events_dropped": done.events_dropped, "unresolved": done.unresolved,
            "hot": done.tiers[HOT_TIER], "warm": done.tiers[WARM_TIER], "cool": done.tiers[COOL_TIER],
            "dagster/row_count": done.rows,
        })
    metadata = {"seconds": round(time.perf_counter() - started, 3), "preview": dg.MetadataValue.md(
        md_table(["tenant", "row", "activation", "tier", "used", "returned"], preview[:12]))}
    yield from report_partitions(context, report, metadata)


activation_job = dg.define_asset_job(
    "activation_job", [memory_activation], partitions_def=tenant_partitions,
    description="Age every tenant's activation from its access log and assign tiers (hot, warm, cool).",
)

activation_assets = [memory_activation]
