"""Signals the web app sends for other apps to act on without being imported here.

``resumed`` is sent after a person resumed an analysis from the UI or the REST API and its
status was written: ``analysis`` (the mirror row), ``uid`` and ``notifications`` (the
``Resumption``'s intents). The notifications app stores its deliveries from it.
"""

from __future__ import annotations

from django.dispatch import Signal

resumed = Signal()
