"""Benchmark: ``kubectl apply`` of a new RolloutAnalysis until its first status, p50 over N applies.

``python -m bench.apply_to_status [--applies 30] [--workers 2] [--background 0]``

Against devcluster and the real Prometheus, with ``manage.py runoperator``: each apply is a new
analysis (two metrics) on its own Deployment, sent with the real kubectl; the clock starts before
kubectl is started and stops when a GET of the resource shows ``status.lastEvaluationTime`` (polled
every 10 ms with ``requests``). The time from kubectl's exit is printed too, since kubectl itself (a
Go binary doing discovery and an OpenAPI-validated apply) takes a share. ``--background N`` keeps N
other analyses evaluating every 30 s meanwhile. Target (docs/performance.md#summary): p50 <= 1 s.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from bench import harness
from sentinel_cluster import kube
from testkit.manifests import analysis_manifest, deployment_manifest
from testkit.metrics_app import MetricsApp

NAMESPACE = "bench-apply"
APP = "checkout"


@dataclass(frozen=True)
class Apply:
    total: float
    kubectl: float

    @property
    def after_kubectl(self) -> float:
        return self.total - self.kubectl


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--applies", type=int, default=30)
    parser.add_argument("--workers", type=int, default=2, help="SENTINEL_Q_WORKERS (default 2)")
    parser.add_argument("--background", type=int, default=0, help="other analyses at 30 s")
    parser.add_argument("--workdir", type=Path, default=None)
    return parser.parse_args(argv)


def _first_status(api: harness.ApiSession, name: str, timeout: float = 30.0) -> None:
    path = kube.analysis_path(NAMESPACE, name)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        resource = api.request("GET", path)
        if (resource.get("status") or {}).get("lastEvaluationTime"):
            return
        time.sleep(0.01)
    raise TimeoutError(f"{name} got no status within {timeout} s")


def _apply_one(stack: harness.Stack, api: harness.ApiSession, name: str) -> Apply:
    manifest = analysis_manifest(
        name, NAMESPACE, target=name, metrics=harness.two_metrics(APP), interval="30s"
    )
    started = time.monotonic()
    stack.cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(manifest))
    kubectl = time.monotonic() - started
    _first_status(api, name)
    return Apply(total=time.monotonic() - started, kubectl=kubectl)


def _feed(app: MetricsApp) -> None:
    app.set(APP, 0.01)
    for _ in range(50):
        app.observe(APP, 0.05)


def run(args: argparse.Namespace) -> int:
    rng = random.Random(2)
    with contextlib.ExitStack() as exits:
        print("starting devcluster, Prometheus and the metrics app", flush=True)
        stack = exits.enter_context(harness.stack(args.workdir))
        api = harness.ApiSession(stack.cluster)
        harness.create_namespace(api, NAMESPACE)
        _feed(stack.app)
        names = [f"apply-{index:03d}" for index in range(args.applies)]
        background = [f"bg-{index:05d}" for index in range(args.background)]
        group = f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments"
        for name in names + background:
            api.request("POST", group, deployment_manifest(name, NAMESPACE))
        operator = harness.BenchOperator(
            stack.workdir / "operator", stack=stack, namespaces=[NAMESPACE], workers=args.workers
        )
        operator.start()
        exits.callback(operator.stop)
        if background:
            print(f"{len(background)} background analyses, spread over 30 s", flush=True)
            analyses = kube.analyses_path(NAMESPACE)
            for name in background:
                manifest = analysis_manifest(
                    name, NAMESPACE, target=name, metrics=harness.two_metrics(APP), interval="30s"
                )
                api.request("POST", analyses, manifest)
                time.sleep(30.0 / len(background))
            time.sleep(30)
        # kubectl's discovery cache is warm after the first call, as for a person at a terminal.
        stack.cluster.kubectl("get", "rolloutanalyses", "-n", NAMESPACE)
        results = []
        for name in names:
            results.append(_apply_one(stack, api, name))
            # Not in step with the dispatcher's poll.
            time.sleep(rng.uniform(0.3, 0.8))
    totals = [r.total for r in results]
    after = [r.after_kubectl for r in results]
    kubectl = [r.kubectl for r in results]
    print(
        f"\nkubectl apply -> first status, {len(results)} applies, "
        f"SENTINEL_Q_WORKERS={args.workers}, {args.background} background analyses:"
    )
    for label, values in (
        ("apply start -> first status", totals),
        ("kubectl itself", kubectl),
        ("kubectl exit -> first status", after),
    ):
        print(
            f"  {label:30} p50 {harness.percentile(values, 0.5):.3f} s  "
            f"p90 {harness.percentile(values, 0.9):.3f} s  max {max(values):.3f} s"
        )
    p50 = harness.percentile(totals, 0.5)
    print(f"target p50 <= 1 s: {'met' if p50 <= 1.0 else 'MISSED'} (p50 {p50:.3f} s)")
    return 0


def main(argv: list[str] | None = None) -> int:
    return run(_parse(argv))


if __name__ == "__main__":
    raise SystemExit(main())
