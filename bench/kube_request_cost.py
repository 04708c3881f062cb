"""Client CPU per Kubernetes request: ``KubeClient``'s lean path against the official client's.

Issue 28's cut 3 (docs/performance.md, "Issue 28: the cuts built") sends the operator's requests
straight over the official client's pooled urllib3 connections instead of through
``ApiClient.param_serialize``/``call_api``. This measures what that saves where it is spent, in
the client process, so the figure does not depend on what else the machine runs: the same
requests (GET an analysis, PUT its status with the resourceVersion just read) against one
devcluster, alternating between the two paths in rounds, CPU time from ``time.process_time``.

    .venv/bin/python -m bench.kube_request_cost [--requests 2000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from typing import Any

from bench.harness import stack
from sentinel_cluster import kube
from testkit.manifests import analysis_manifest, gauge_metric

_NAMESPACE = "bench-kube"


def _official(client: kube.KubeClient) -> Callable[[str, str, Any], dict[str, Any]]:
    """The official client's request path, as ``KubeClient`` used it before issue 28."""
    api_client = client.api_client

    def request(method: str, path: str, body: Any = None) -> dict[str, Any]:
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        prepared = api_client.param_serialize(
            method=method,
            resource_path=path,
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        response = api_client.call_api(*prepared, _request_timeout=10.0)
        response.read()
        return json.loads(response.data)

    return request


def evaluation_status(turn: int) -> dict[str, Any]:
    """Return a status the size of a two-metric evaluation's, different at every turn."""
    when = f"2026-12-03T10:{turn // 60 % 60:02d}:{turn % 60:02d}Z"
    conditions = [
        {
            "type": kind,
            "status": "True",
            "reason": "Evaluating",
            "message": f"{kind}: every metric within its limit at {when}",
            "lastTransitionTime": when,
            "observedGeneration": 1,
        }
        for kind in ("Ready", "Healthy", "RolloutPaused")
    ]
    results = [
        {"name": name, "value": f"0.{turn % 1000:03d}", "maxValue": 0.5, "verdict": "Pass"}
        for name in ("p99-latency", "error-rate")
    ]
    return {
        "observedGeneration": 1,
        "lastVerdict": "Pass",
        "failures": 0,
        "lastEvaluationTime": when,
        "metricResults": results,
        "conditions": conditions,
    }


def two_metric_analysis(client: kube.KubeClient, namespace: str) -> dict[str, Any]:
    """Create ``namespace`` and a two-metric analysis ``ra`` in it; return the API's answer."""
    client.request(
        "POST",
        "/api/v1/namespaces",
        body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
    )
    metrics = [
        gauge_metric("bench", 0.5, "p99-latency"),
        gauge_metric("bench", 0.5, "error-rate"),
    ]
    manifest = analysis_manifest("ra", namespace, metrics=metrics)
    return client.request("POST", kube.analyses_path(namespace), body=manifest)  # type: ignore[arg-type]


def _cycles(request: Callable[..., dict[str, Any]], path: str, count: int) -> float:
    """Return CPU milliseconds per request of ``count`` requests (GET and status PUT in turn)."""
    started = time.process_time()
    for turn in range(count // 2):
        current = request("GET", path)
        current["status"] = evaluation_status(turn)
        request("PUT", f"{path}/status", current)
    return (time.process_time() - started) * 1000 / (count // 2 * 2)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000, help="per path and round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    with stack() as running:
        client = kube.KubeClient(running.cluster.api_client())
        two_metric_analysis(client, _NAMESPACE)
        path = kube.analysis_path(_NAMESPACE, "ra")
        official = _official(client)

        def lean(method: str, path: str, body: Any = None) -> dict[str, Any]:
            return client.request(method, path, body=body)

        _cycles(lean, path, 100)  # warm both paths' connection and caches
        _cycles(official, path, 100)
        rows = []
        for round_ in range(1, args.rounds + 1):
            rows.append(
                {
                    "round": round_,
                    "official_ms": round(_cycles(official, path, args.requests), 3),
                    "lean_ms": round(_cycles(lean, path, args.requests), 3),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
        print(json.dumps({"rounds": rows, "load_avg": [round(x, 2) for x in os.getloadavg()]}))


if __name__ == "__main__":
    main()
