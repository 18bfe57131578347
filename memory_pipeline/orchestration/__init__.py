"""Dagster plumbing shared by the slices: partitions, pools, resources, the IO manager, sensor and
cron helpers, launching runs and reading their metadata, LanceDB maintenance; the instance's
storage, run launcher and forgetting in ``instance/``."""
