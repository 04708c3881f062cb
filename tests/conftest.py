"""Root conftest: register the shared fixtures of tests/support for every test package."""

pytest_plugins = [
    "tests.support.fixtures",
    "tests.support.cluster_fixtures",
    "tests.support.operator_fixtures",
]
