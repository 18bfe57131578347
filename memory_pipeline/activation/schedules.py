"""The nightly activation run: one run over every registered tenant, before the tables are optimized.

The schedule plans with a pure function (``plan_activation_run``): every tenant partition the
instance holds, as one single-run range, so the decay is computed for all tenants at one time.
"""

import dagster as dg

from memory_pipeline.activation.assets import activation_job
from memory_pipeline.config import get_settings
from memory_pipeline.orchestration.automation import schedule_status
from memory_pipeline.orchestration.partitions import TENANTS_PARTITION
from memory_pipeline.orchestration.runs import range_tags



def plan_activation_run(tenants: list[str]) -> dg.RunRequest | dg.SkipReason:
    if not tenants:
        return dg.SkipReason("no tenant is registered yet: nothing to age")
    return dg.RunRequest(tags=range_tags(tenants[0], tenants[-1]))


@dg.schedule(
    name="activation_schedule", job=activation_job, cron_schedule=get_settings().activation_cron, execution_timezone="UTC",
    default_status=schedule_status(),
    description="Ages every tenant's activation from its access log and assigns tiers (MEMORY_PIPELINE_ACTIVATION_CRON, nightly at 02:30 UTC by default: before the optimize run compacts the rewritten rows).",
)
def activation_schedule(context: dg.ScheduleEvaluationContext):
    return plan_activation_run(list(context.instance.get_dynamic_partitions(TENANTS_PARTITION)))
