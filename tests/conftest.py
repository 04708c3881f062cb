"""Root conftest: register the shared fixtures, tier markers and schedule of tests/support.

Hypothesis's per-example deadline (200 ms) is off for the whole suite: it is a timing assertion,
and on a loaded machine (two copies of the suite on two cores) a pure property test's example
took 337 ms and failed. The properties are what the tests check; speed is measured in bench/
(docs/testkit.md#parallel-runs).
"""

from hypothesis import settings

settings.register_profile("suite", deadline=None)
settings.load_profile("suite")

pytest_plugins = [
    "tests.support.fixtures",
    "tests.support.cluster_fixtures",
    "tests.support.operator_fixtures",
    "tests.support.pod_fixtures",
    "tests.support.tiers",
    "tests.support.schedule",
]
