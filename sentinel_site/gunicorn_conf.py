"""gunicorn configuration for the web app: ``gunicorn -c python:sentinel_site.gunicorn_conf``.

Bind address and worker count stay on the command line; this module holds what is the same
everywhere.
"""

from __future__ import annotations

import gc
from typing import Any


def post_worker_init(worker: Any) -> None:
    """Move everything the loaded app holds out of the garbage collector's walks.

    Evaluation pages allocate reference cycles (prefetched rows point at each other), which
    trigger a full collection every few dozen requests; a full collection walks every object of
    Django, DRF and drf-spectacular and took 55-65 ms, the whole p99 budget of docs/performance.md.
    Freezing them after the worker loaded the app cut the p99 of those pages from 80-85 ms to
    30-35 ms (docs/performance.md).
    """
    gc.collect()
    gc.freeze()
