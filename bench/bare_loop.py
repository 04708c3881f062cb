"""The baseline for the operator's throughput: the same HTTP calls, in a bare ``requests`` loop.

One cycle per analysis, as one reconcile makes them: GET the RolloutAnalysis, GET its target
Deployment, one Prometheus instant query per metric, PUT the status back through ``/status``
with the resourceVersion just read. No Django, no database, no queue, no decision. ``run``
splits the analyses over ``processes`` worker processes (as many as the operator has django-q2
workers, so both get the same concurrency) and returns the cycles per second.
``bench.operator_throughput`` calls it after stopping the operator, so both see the same
devcluster and Prometheus, one at a time.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Sequence
from dataclasses import dataclass

import requests

from sentinel_cluster import kube


@dataclass(frozen=True)
class Target:
    """Where one worker process sends its calls."""

    api_url: str
    ca_file: str
    token: str
    prometheus_url: str


@dataclass(frozen=True)
class BareLoopResult:
    cycles: int
    seconds: float
    processes: int
    # CPU seconds the loop processes themselves used in the timed part.
    client_cpu: float

    @property
    def per_second(self) -> float:
        return self.cycles / self.seconds if self.seconds > 0 else float("nan")


def _cycles(target: Target, namespace: str, names: Sequence[str]) -> int:
    session = requests.Session()
    # Else REQUESTS_CA_BUNDLE from the environment overrides the session's CA file.
    session.trust_env = False
    session.verify = target.ca_file
    session.headers["Authorization"] = f"Bearer {target.token}"
    prometheus = requests.Session()
    prometheus.trust_env = False
    done = 0
    for name in names:
        path = target.api_url + kube.analysis_path(namespace, name)
        resource = session.get(path, timeout=30).json()
        spec = resource["spec"]
        deployment = f"/apis/apps/v1/namespaces/{namespace}/deployments/{spec['target']['name']}"
        session.get(target.api_url + deployment, timeout=30).json()
        for metric in spec["metrics"]:
            prometheus.get(
                f"{target.prometheus_url}/api/v1/query",
                params={"query": metric["query"], "timeout": "5000ms"},
                timeout=5,
            ).json()
        response = session.put(f"{path}/status", json=resource, timeout=30)
        response.raise_for_status()
        done += 1
    return done


def _worker(arguments: tuple[Target, str, list[str]]) -> tuple[int, float]:
    started = time.process_time()
    cycles = _cycles(*arguments)
    return cycles, time.process_time() - started


def run(target: Target, namespace: str, names: Sequence[str], processes: int) -> BareLoopResult:
    """Make one cycle per name across ``processes`` processes; return how fast it went."""
    slices = [list(names[index::processes]) for index in range(processes)]
    # spawn, not fork: the benchmark process has threads (the metrics app, its feeder).
    context = multiprocessing.get_context("spawn")
    with context.Pool(processes) as pool:
        # Warm the pool (imports, first connections) outside the timed part.
        pool.map(_worker, [(target, namespace, part[:1]) for part in slices])
        started = time.monotonic()
        done = pool.map(_worker, [(target, namespace, part) for part in slices])
        seconds = time.monotonic() - started
    return BareLoopResult(
        cycles=sum(cycles for cycles, _ in done),
        seconds=seconds,
        processes=processes,
        client_cpu=sum(cpu for _, cpu in done),
    )
