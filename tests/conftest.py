"""Root conftest: register the shared fixtures of tests/support for every test package."""

pytest_plugins = ["tests.support.fixtures"]
