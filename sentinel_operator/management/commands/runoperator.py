"""``python manage.py runoperator``: the watch, the dispatcher and django-q2 workers in one command.

See ``sentinel_operator.runtime`` for what runs. A configuration problem (a malformed setting,
a kubeconfig that cannot be loaded or whose server cannot be reached, a busy metrics port) is
one line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import gc
import logging
import os
import socket
from argparse import ArgumentParser
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from notifications import channels
from sentinel_operator import runtime, transient
from sentinel_operator.providers import ProvidersError, check_at_start


class Command(BaseCommand):
    help = "Run the Rollout Sentinel operator: leader election, watch, dispatcher and workers."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--metrics-port",
            type=int,
            default=None,
            help="port of /metrics (default: SENTINEL_METRICS_ADDR's, 9100)",
        )
        parser.add_argument(
            "--metrics-address",
            default=None,
            help="address of /metrics (default: SENTINEL_METRICS_ADDR's, 127.0.0.1)",
        )
        parser.add_argument(
            "--lease-name", default="rollout-sentinel", help="name of the leader-election Lease"
        )
        parser.add_argument(
            "--lease-duration",
            type=float,
            default=15.0,
            help="seconds a leader's Lease lasts without renewal (default 15)",
        )
        parser.add_argument(
            "--no-workers",
            action="store_true",
            help="do not start django-q2 workers here (they run in `qcluster` elsewhere)",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        if not settings.SENTINEL.task_key and not settings.DEBUG:
            raise CommandError(
                "SENTINEL_TASK_KEY must be set for the operator when SENTINEL_DEBUG is off: "
                "its tasks are signed with it, never with the web app's SENTINEL_SECRET_KEY; "
                "put it in the operator's own Secret (docs/operations.md).",
                returncode=2,
            )
        try:
            # The schema was checked with the settings; the secret files only the operator reads.
            check_at_start(settings.SENTINEL.providers_file)
        except ProvidersError as exc:
            raise CommandError(str(exc), returncode=2) from None
        duration = float(opts["lease_duration"])
        if duration < 2:
            raise CommandError("--lease-duration must be at least 2 seconds.", returncode=2)
        options = runtime.Options(
            metrics_port=int(opts["metrics_port"] or settings.SENTINEL.metrics_port),
            metrics_address=str(opts["metrics_address"] or settings.SENTINEL.metrics_address),
            lease_name=str(opts["lease_name"]),
            lease_namespace=os.environ.get("POD_NAMESPACE") or "default",
            identity=os.environ.get("POD_NAME") or f"{socket.gethostname()}-{os.getpid()}",
            lease_duration=duration,
            # client-go's proportions: renew well before the others may take over.
            renew_deadline=duration * 2 / 3,
            retry_period=max(0.5, duration / 7.5),
            workers=not opts["no_workers"],
        )
        # A database or API server restart: one line per loop that noticed, not a traceback.
        transient.install(logging.getLogger("django-q"))
        if options.workers:
            share_with_workers()
        try:
            code = runtime.run(options)
        except runtime.StartupError as exc:
            raise CommandError(str(exc), returncode=2) from exc
        if code:
            raise CommandError(f"operator stopped with exit code {code}", returncode=code)


def share_with_workers() -> None:
    """Make what the forked django-q2 processes need pages they share with this one.

    Apprise loading its plugins on a worker's first message makes them that worker's private
    memory (docs/reliability.md); and Python's collector, walking every object inherited from
    this process, writes to (and so copies) the pages they sit on. ``gc.freeze`` moves them out
    of the collector's reach. ``runtime.run`` imports matplotlib and the rest before it forks
    (``preload_worker_modules``).
    """
    runtime.preload_worker_modules()
    if settings.SENTINEL_NOTIFY.channels:
        channels.load_plugins()
    gc.freeze()
