"""``python manage.py backtest NS/NAME``: what an analysis would have done on past rollouts.

For scripts and CI (docs/backtest.md). Reads the analysis (or ``--spec FILE``, a draft: a spec or
a whole RolloutAnalysis in YAML or JSON) and its target from the cluster of ``KUBECONFIG`` (or
the in-cluster configuration), asks the configured metric providers, and prints a table per
rollout, or with ``--json`` the same JSON as the REST API's result. Writes nothing anywhere.

Exit status: 0 when the guard would have paused none of the rollouts that were not rolled back,
1 when it would have paused one, 2 with one line on stderr when it cannot run (unknown
analysis, cluster unreachable, Prometheus down, a bad argument).
"""

from __future__ import annotations

import json
import os
import sys
from argparse import ArgumentParser
from pathlib import Path
from typing import Any

import yaml
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from sentinel_cluster import kube
from sentinel_core.backtest import DEFAULT_ROLLOUTS, MAX_DURATION_LIMIT_SECONDS, MAX_ROLLOUTS
from sentinel_core.spec import parse_duration
from sentinel_core.values import format_time
from sentinel_operator.backtest import Backtest, BacktestError, Replayer, Result
from sentinel_operator.providers import Providers, ProvidersError


class Command(BaseCommand):
    help = "Replay an analysis over its target's past rollouts and say what it would have done."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("analysis", help="NAMESPACE/NAME of the RolloutAnalysis")
        parser.add_argument(
            "--spec", help="a draft spec (or a whole RolloutAnalysis), YAML or JSON, to try instead"
        )
        parser.add_argument(
            "--rollouts",
            type=int,
            default=DEFAULT_ROLLOUTS,
            help=f"how many of the newest rollouts (default {DEFAULT_ROLLOUTS}, at most "
            f"{MAX_ROLLOUTS})",
        )
        parser.add_argument(
            "--max-duration",
            default="1h",
            help="a rollout ends at the next one or after this long (default 1h)",
        )
        parser.add_argument("--json", action="store_true", help="print the result as JSON")

    def handle(self, *args: Any, **opts: Any) -> None:
        namespace, _, name = str(opts["analysis"]).partition("/")
        if not namespace or not name or "/" in name:
            raise CommandError("the analysis is NAMESPACE/NAME, e.g. shop/checkout", returncode=2)
        try:
            max_duration = parse_duration(str(opts["max_duration"]))
        except ValueError as exc:
            raise CommandError(f"--max-duration: {exc}", returncode=2) from None
        if max_duration > MAX_DURATION_LIMIT_SECONDS:
            raise CommandError("--max-duration: at most 24h", returncode=2)
        draft = _draft(opts["spec"]) if opts["spec"] else None
        try:
            client = kube.KubeClient(kube.load_api_client(os.environ.get("KUBECONFIG") or None))
        except kube.KubeError as exc:
            raise CommandError(f"cannot load the Kubernetes configuration: {exc}", 2) from None
        try:
            result = Backtest(client, Replayer(_providers())).run(
                namespace,
                name,
                spec=draft,
                rollouts=int(opts["rollouts"]),
                max_duration=max_duration,
            )
        except BacktestError as exc:
            raise CommandError(str(exc), returncode=2) from None
        if opts["json"]:
            self.stdout.write(json.dumps(result.to_dict(), indent=2))
        else:
            self.stdout.write(render(result))
        sys.exit(result.exit_code)


def _providers() -> Providers:
    config = settings.SENTINEL
    try:
        return Providers(
            path=config.providers_file,
            default_url=config.prometheus_url,
            default_token=config.prometheus_token,
            timeout=config.prometheus_timeout,
            max_bytes=config.prometheus_max_bytes,
        )
    except ProvidersError as exc:
        raise CommandError(str(exc), returncode=2) from None


def _draft(path: str) -> dict[str, Any]:
    try:
        loaded = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise CommandError(f"--spec {path}: {exc.strerror}", returncode=2) from None
    except yaml.YAMLError as exc:
        raise CommandError(
            f"--spec {path}: not YAML or JSON ({exc})".replace("\n", " "), 2
        ) from None
    if isinstance(loaded, dict) and loaded.get("kind") == "RolloutAnalysis":
        loaded = loaded.get("spec")
    if not isinstance(loaded, dict):
        raise CommandError(f"--spec {path}: not a spec (an object with target and metrics)", 2)
    return loaded


def render(result: Result) -> str:
    """Return the result as a table, one row per rollout, and the summary."""
    rows = [
        (
            "REVISION",
            "HASH",
            "STARTED",
            "ENDED",
            "PASS",
            "FAIL",
            "INC",
            "ERR",
            "ROLLED BACK",
            "WOULD PAUSE",
        )
    ]
    notes: list[str] = []
    for replay in result.replays:
        r, v = replay.rollout, replay.verdicts
        if replay.no_data:
            pause = "no data"
        elif replay.would_pause_at is not None:
            pause = f"#{replay.evaluation} at {format_time(replay.would_pause_at)}"
            notes.append(f"revision {r.revision}: {replay.message}")
        else:
            pause = "-"
        rows.append(
            (
                str(r.revision),
                r.key,
                format_time(r.started_at),
                format_time(r.ended_at),
                str(v.passed),
                str(v.failed),
                str(v.inconclusive),
                str(v.errors),
                "yes" if r.rolled_back else "no",
                pause,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    s = result.summary
    lines.append("")
    lines.extend(notes)
    lines.append(
        f"{result.namespace}/{result.name}: {s['rollouts']} rollouts, {s['wouldPause']} would "
        f"have paused, {s['rolledBack']} rolled back by a person; paused and rolled back: "
        f"{len(s['caught'])}, rolled back but not paused: {len(s['missed'])}, paused but not "
        f"rolled back: {len(s['pausedNotRolledBack'])}; {result.queries} queries"
    )
    return "\n".join(lines)
