"""The benchmark suite: `python -m bench` (see bench/run_all.py and bench/README.md)."""
