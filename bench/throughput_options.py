"""The command line of ``bench.operator_throughput``: its flags and the ``Options`` they make.

Kept apart from the run so that the phases read the settings from one typed object; the flags,
their defaults and their help are the benchmark's interface (bench/README.md documents them).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Options:
    """One run's settings, from the command line."""

    # "dev" (devcluster) or "real" (the real control plane, docs/realcluster.md).
    cluster: str
    analyses: int
    interval: int
    workers: int
    window: float
    # Intervals to wait after every analysis was evaluated once, before the first window: the
    # start's backlog takes a few intervals to spread onto the analyses' phases.
    warmup: int
    runs: int
    apps: int
    workdir: Path | None
    # py-spy binary and output file: profile the operator while it is saturated.
    py_spy: str
    profile: Path | None
    # "" (a SQLite file), "postgres" (a throwaway server) or a postgres:// URL.
    database_url: str
    # "" (django-q2's ORM broker), "redis" (a throwaway redis-server) or a redis:// URL.
    broker_url: str
    operators: int
    # Scrape the operator's /metrics this often during the window (0: never), as Prometheus would.
    scrape_interval: float
    json: bool
    bare: bool
    capacity: bool


def parse_options(argv: list[str] | None, description: str) -> Options:
    """Return the options of ``argv`` (None: the command line); ``description`` heads --help."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--cluster",
        choices=("dev", "real"),
        default="dev",
        help="devcluster (default) or the real control plane built by `make realcluster`",
    )
    parser.add_argument("--analyses", type=int, default=1000)
    parser.add_argument("--interval", type=int, default=30, help="seconds (default 30)")
    parser.add_argument(
        "--workers", type=int, default=2, help="SENTINEL_Q_WORKERS (default 2, the shipped one)"
    )
    parser.add_argument(
        "--window", type=float, default=0.0, help="steady-state seconds (default 3 intervals)"
    )
    parser.add_argument(
        "--warmup",
        type=int,
        default=1,
        help="intervals between the first evaluation of all and the first window (default 1)",
    )
    parser.add_argument("--runs", type=int, default=1, help="steady-state windows (default 1)")
    parser.add_argument("--apps", type=int, default=50, help="distinct series sets (default 50)")
    parser.add_argument("--workdir", type=Path, default=None, help="keep logs and databases here")
    parser.add_argument(
        "--profile",
        type=Path,
        default=None,
        help="write py-spy's collapsed stacks of the capacity phase here",
    )
    parser.add_argument("--py-spy", default="py-spy", help="the py-spy binary for --profile")
    parser.add_argument(
        "--database-url",
        default="",
        help="'postgres' (a throwaway server) or the URL of an empty database (default SQLite)",
    )
    parser.add_argument(
        "--broker-url", default="", help="'redis' (a throwaway server) or a redis:// URL"
    )
    parser.add_argument("--redis", action="store_true", help="the same as --broker-url redis")
    parser.add_argument("--operators", type=int, default=1, help="runoperator replicas")
    parser.add_argument(
        "--scrape-interval",
        type=float,
        default=0.0,
        help="scrape the operator's /metrics every this many seconds in the window (default never)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object at the end")
    parser.add_argument("--no-bare-loop", action="store_true", help="skip the bare loop")
    parser.add_argument("--no-capacity", action="store_true", help="skip the saturated phase")
    args = parser.parse_args(argv)
    return Options(
        cluster=args.cluster,
        analyses=args.analyses,
        interval=args.interval,
        workers=args.workers,
        window=args.window or 3.0 * args.interval,
        warmup=max(0, args.warmup),
        runs=max(1, args.runs),
        apps=args.apps,
        workdir=args.workdir,
        py_spy=args.py_spy,
        profile=args.profile,
        database_url=args.database_url,
        broker_url=args.broker_url or ("redis" if args.redis else ""),
        operators=max(1, args.operators),
        scrape_interval=args.scrape_interval,
        json=args.json,
        bare=not args.no_bare_loop,
        capacity=not args.no_capacity,
    )
