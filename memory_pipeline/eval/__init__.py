"""Recall evaluation harnesses (they run the real pipeline, so they may depend on Dagster)."""
