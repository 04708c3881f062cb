"""gunicorn configuration for the web app: ``gunicorn -c python:sentinel_site.gunicorn_conf``.

Bind address and worker count stay on the command line; this module holds what is the same
everywhere.
"""

from __future__ import annotations

import gc
from typing import Any

# The app is loaded once, by the master, before it listens and forks the workers. gunicorn
# kills a worker that has not reported for `timeout` (30 s) and counts its start, the import of
# Django and the app, against that: on a starved node (two copies of the suite on two cores,
# load 35) every worker was killed while importing and started again, and the web app never
# answered (docs/operations.md#the-web-app-under-gunicorn). The master has no such limit; the
# workers then share the loaded app's memory pages instead of importing it each. Nothing opens
# a connection at import: Django connects to the database on the first query, in the worker.
preload_app = True


def post_worker_init(worker: Any) -> None:
    """Move everything the loaded app holds out of the garbage collector's walks.

    Evaluation pages allocate reference cycles (prefetched rows point at each other), which
    trigger a full collection every few dozen requests; a full collection walks every object of
    Django, DRF and drf-spectacular, which costs about the whole p99 budget of
    docs/performance.md. Freezing them in each worker, after the fork from the master that loaded
    the app, keeps those walks out of the requests (the figures are in docs/performance.md).
    """
    gc.collect()
    gc.freeze()
