"""Benchmarks of SPEC §13 (not tests): run each module with ``python -m bench.<name>``.

Each prints its figures; ``docs/performance.md`` records what was measured and how.
"""
