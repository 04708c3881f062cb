"""Pytest plugin (``-p testkit.pytest_environment`` in pyproject's addopts): test settings.

Loaded before pytest-django imports the settings, so that the production rule "no secret key,
no start-up" (SPEC §7.1) is met by a key that says it is for tests, and so that the processes
the tests start (``manage.py runoperator``, ``runserver``) inherit it with ``os.environ``. The
tests talk plain HTTP to 127.0.0.1, where cookies marked Secure would never be sent back.
"""

import os

os.environ.setdefault("SENTINEL_SECRET_KEY", "tests-only-" + "k" * 50)
os.environ.setdefault("SENTINEL_SECURE_COOKIES", "false")
