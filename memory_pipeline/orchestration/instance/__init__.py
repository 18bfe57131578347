"""The Dagster instance the pipeline runs on: its storage (SQLite locally, ``sqlite``; PostgreSQL in
production, ``postgres``), the run launcher that tells a killed run's worker (``run_workers``) and
forgetting tenants in it (``forget_runs``)."""
