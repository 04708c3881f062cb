"""Prometheus with a past written in: samples at chosen past instants, for backtests.

Prometheus holds only what it scraped, at the times it scraped it; a backtest needs values at
known past instants. ``backfilled`` writes samples in the OpenMetrics text format, turns them
into TSDB blocks with ``promtool tsdb create-blocks-from openmetrics`` (Debian's ``promtool``,
the same release as its ``prometheus``) in the server's storage, and returns the server (not
started, no scrape targets), so it serves exactly those samples.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path

from testkit.prometheus import PrometheusServer

PROMTOOL = "/usr/bin/promtool"
# One sample: metric name, labels, value, when.
Sample = tuple[str, Mapping[str, str], float, datetime]


def openmetrics(samples: Iterable[Sample]) -> str:
    """Return ``samples`` as OpenMetrics text, grouped by name, oldest first.

    Gauges, but a name ending in ``_total`` is a counter (its values must not go down).
    """
    by_name: dict[str, list[Sample]] = {}
    for sample in samples:
        by_name.setdefault(sample[0], []).append(sample)
    lines: list[str] = []
    for name, group in by_name.items():
        # A name ending in _total is a counter; its OpenMetrics family is the name without it.
        family = name.removesuffix("_total")
        lines.append(f"# TYPE {family} {'counter' if family != name else 'gauge'}")
        for _, labels, value, moment in sorted(group, key=lambda s: s[3]):
            text = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
            lines.append(f"{name}{{{text}}} {value!r} {moment.timestamp():.3f}")
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def backfilled(workdir: Path, samples: Iterable[Sample]) -> PrometheusServer:
    """Return a Prometheus (not started) whose storage holds exactly ``samples``."""
    server = PrometheusServer(workdir)
    source = Path(workdir) / "backfill.om"
    source.write_text(openmetrics(samples))
    subprocess.run(
        [PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", str(source), str(server.storage)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return server
