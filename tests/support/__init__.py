"""The suite's shared pytest fixtures, thin wrappers over ``testkit`` (the one test kit).

``fixtures`` (the metrics app, Prometheus, the fault proxy, ``case``, ``gauge``),
``cluster_fixtures`` (the session devcluster, an admin client, a namespace per test) and
``operator_fixtures`` (the migrated database, ``runoperator`` processes) are registered as
plugins by the root ``tests/conftest.py``.
"""
