"""Benchmarks (not tests): run each module with ``python -m bench.<name>``.

Each prints its figures; ``docs/performance.md`` states the targets and records what was
measured and how.
"""
