"""Pytest plugin (``-p testkit.pytest_environment`` in pyproject's addopts): test settings.

Loaded before pytest-django imports the settings, so that the production rule "no secret key, no
start-up" (docs/operations.md) is met by ``testkit.site_env``'s key, and so that the processes the
tests start (``manage.py runoperator``, ``runserver``) inherit it through ``os.environ``.
"""

import os

from testkit.site_env import DEFAULTS

for _name, _value in DEFAULTS.items():
    os.environ.setdefault(_name, _value)
