"""Root conftest: register the shared fixtures, tier markers and schedule of tests/support."""

pytest_plugins = [
    "tests.support.fixtures",
    "tests.support.cluster_fixtures",
    "tests.support.operator_fixtures",
    "tests.support.pod_fixtures",
    "tests.support.tiers",
    "tests.support.schedule",
]
