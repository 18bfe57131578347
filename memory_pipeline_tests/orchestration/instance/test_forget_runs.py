"""Proves: forgetting a tenant reads each run's range in the order of the partition set its job is
partitioned by. A consolidation run over a range of session tenants covers the keys between its
ends as the session tenants are ordered, which need not be the order of the tenants (registered
at other times, with agent-wide tenants between them): read in the wrong order, a forgotten
tenant inside the range would keep its records in the run. Ranges of (day, tenant) keys, which
consolidation runs carried while partitioned by day x tenant, still name their tenant.
"""

from __future__ import annotations

import dagster as dg
from dagster._core.storage.dagster_run import DagsterRun

from memory_pipeline.orchestration.instance.forget_runs import runs_covering
from memory_pipeline.orchestration.partitions import SESSION_TENANTS_PARTITION, TENANTS_PARTITION
from memory_pipeline.orchestration.runs import range_tags


def covered(instance, run: DagsterRun, keys: list[str]) -> list[str]:
    return [key for key in keys if runs_covering(instance, lambda k, key=key: k == key)(run)]


def test_a_range_is_read_in_the_order_of_its_jobs_partition_set():
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(TENANTS_PARTITION, ["a~_global", "a~ann", "a~bob", "a~cy"])
    instance.add_dynamic_partitions(SESSION_TENANTS_PARTITION, ["a~ann", "a~cy", "a~bob"])  # cy came first
    keys = ["a~_global", "a~ann", "a~bob", "a~cy"]

    consolidation = DagsterRun(job_name="consolidation_job", run_id="c1", tags=range_tags("a~ann", "a~cy"))
    assert covered(instance, consolidation, keys) == ["a~ann", "a~cy"]  # bob was registered after cy
    l0 = DagsterRun(job_name="l0_index_job", run_id="l1", tags=range_tags("a~ann", "a~cy"))
    assert covered(instance, l0, keys) == ["a~ann", "a~bob", "a~cy"]
    single = DagsterRun(job_name="dreaming_job", run_id="d1", tags={"dagster/partition": "a~bob"})
    assert covered(instance, single, keys) == ["a~bob"]
    # A consolidation run of an instance from before: a range of one tenant's days.
    legacy = DagsterRun(job_name="consolidation_job", run_id="o1", tags=range_tags("2026-10-01|a~bob", "2026-10-09|a~bob"))
    assert covered(instance, legacy, keys) == ["a~bob"]
