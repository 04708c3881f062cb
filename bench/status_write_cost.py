"""What one status write costs the real API server, by the status's size and by its watchers.

Issue 43 left one Kubernetes request per evaluation, the status ``PUT``, and it still costs
kube-apiserver 8-9 ms of CPU on two cores at 5,000 x 2 at 60 s (docs/performance.md, "After the
caches"). This asks where that goes: the same ``PUT …/status`` of one RolloutAnalysis, each with
a new ``lastEvaluationTime`` (an unchanged object is not written), ``--writes`` times per case,
on the real control plane (``make realcluster``), the CPU of kube-apiserver and etcd from
``/proc`` per write. The cases:

- ``minimal``: ``observedGeneration`` and ``lastEvaluationTime`` only;
- ``threshold``: what the operator writes for two threshold metrics (three conditions, two
  results, as the throughput benchmark's analyses have), each message a metric's sentence;
- ``terse``: the same fields with one-word messages (is it the bytes or the fields?);
- ``sequential``: one sequential metric's status (its 24 log ratios and 61 bound logs);

each with no watch of analyses open and with ``--watchers`` of them (the operators' caches and
mirrors). Then the ``threshold`` case written two other ways, with the watchers open:

- ``patch``: a JSON merge ``PATCH`` of the status (with the ``resourceVersion`` as its
  precondition) instead of the ``PUT`` of the whole object;
- ``no-rules``: the ``PUT`` again with the CRD's CEL rules (``x-kubernetes-validations``, on the
  spec) removed, then put back: does a status write pay for the spec's rules?

The writes are sequential from one client, so the figures are the server's cost per write, not
its throughput.

    .venv/bin/python -m bench.status_write_cost [--writes 1000] [--watchers 2]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.cpu import CpuMeter
from bench.harness import server_pids, stack
from sentinel_cluster import kube
from testkit.manifests import analysis_manifest, gauge_metric

NAMESPACE = "bench-status"
MESSAGE = (
    "latency is 0.412, above maxValue 0.3 (histogram_quantile(0.99, sum by (le) "
    '(rate(http_request_duration_seconds_bucket{app="checkout"}[1m]))))'
)


def _condition(kind: str, status: str, reason: str, at: str, message: str) -> dict[str, Any]:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": at,
        "observedGeneration": 1,
    }


def _status(case: str, at: str) -> dict[str, Any]:
    base: dict[str, Any] = {"observedGeneration": 1, "lastEvaluationTime": at}
    if case == "minimal":
        return base
    # "terse": the threshold case's fields with one-word messages (bytes or fields?).
    message = "over" if case == "terse" else MESSAGE
    conditions = [
        _condition("Ready", "True", "Evaluating", at, message),
        _condition("Healthy", "False", "ThresholdExceeded", at, message),
        _condition("RolloutPaused", "False", "BelowFailureLimit", at, message),
    ]
    if case in ("threshold", "terse"):
        results = [
            {"name": name, "verdict": "Fail", "value": "0.412", "message": message}
            for name in ("latency", "errors")
        ]
    else:
        results = [
            {
                "name": "errors",
                "verdict": "Inconclusive",
                "value": "3.2",
                "message": MESSAGE,
                "sequential": {
                    "key": "6c7697bc9d/1",
                    "since": at,
                    "through": at,
                    "evidence": 3.2,
                    "needed": 20,
                    "logRatios": [round(-0.1 * i, 6) for i in range(24)],
                    "boundLogs": [round(-0.37 * i, 6) for i in range(61)],
                    "newBad": 50,
                    "newTotal": 401,
                    "oldBad": 76,
                    "oldTotal": 1605,
                    "steps": 7,
                },
            }
        ]
    return {**base, "conditions": conditions, "failures": 1, "metricResults": results}


@contextmanager
def _watchers(client: kube.KubeClient, count: int) -> Iterator[list[int]]:
    """Open ``count`` watches of the namespace's analyses, each counting the events it reads."""
    from kubernetes import client as k8s
    from kubernetes import watch as k8s_watch

    seen = [0] * count
    stop = threading.Event()
    api = k8s.CustomObjectsApi(client.api_client)

    def follow(index: int) -> None:
        watch = k8s_watch.Watch()
        events = watch.stream(
            api.list_namespaced_custom_object,
            kube.GROUP,
            kube.VERSION,
            NAMESPACE,
            kube.PLURAL,
            timeout_seconds=3600,
        )
        # A watch still open when the benchmark stops the cluster ends with the connection.
        with contextlib.suppress(Exception):
            for _ in events:
                seen[index] += 1
                if stop.is_set():
                    watch.stop()

    threads = [threading.Thread(target=follow, args=(i,), daemon=True) for i in range(count)]
    for thread in threads:
        thread.start()
    try:
        yield seen
    finally:
        stop.set()


def _writes(client: kube.KubeClient, case: str, writes: int, *, patch: bool = False) -> None:
    path = kube.analysis_path(NAMESPACE, "subject") + "/status"
    current = client.request("GET", kube.analysis_path(NAMESPACE, "subject"))
    # After the last case's times, so that every write changes the object.
    last = (current.get("status") or {}).get("lastEvaluationTime")
    start = (
        datetime.fromisoformat(last.replace("Z", "+00:00")) + timedelta(seconds=1)
        if last
        else datetime(2026, 1, 1, tzinfo=UTC)
    )
    for i in range(writes):
        at = (start + timedelta(seconds=i)).strftime("%Y-%m-%dT%H:%M:%SZ")
        if patch:
            version = current["metadata"]["resourceVersion"]
            body = {"metadata": {"resourceVersion": version}, "status": _status(case, at)}
            current = client.request("PATCH", path, body=body, content_type=kube.MERGE_PATCH)
        else:
            current = client.request("PUT", path, body={**current, "status": _status(case, at)})


def _without_rules(node: Any) -> Any:
    """Return a copy of a CRD schema without its CEL rules."""
    if isinstance(node, dict):
        return {k: _without_rules(v) for k, v in node.items() if k != "x-kubernetes-validations"}
    if isinstance(node, list):
        return [_without_rules(v) for v in node]
    return node


@contextmanager
def _crd_without_rules(client: kube.KubeClient) -> Iterator[None]:
    """Replace the RolloutAnalysis CRD's schema by one without CEL rules; put it back after."""
    path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{kube.PLURAL}.{kube.GROUP}"
    crd = client.request("GET", path)
    spec = crd["spec"]
    crd = client.request("PUT", path, body={**crd, "spec": _without_rules(spec)})
    time.sleep(5)  # the API server rebuilds the resource's handler
    try:
        yield
    finally:
        crd = client.request("GET", path)
        client.request("PUT", path, body={**crd, "spec": spec})
        time.sleep(5)


def _measure(
    client: kube.KubeClient,
    meter: CpuMeter,
    case: str,
    *,
    writes: int,
    watchers: int,
    way: str = "put",
) -> dict[str, Any]:
    """Write ``case`` ``writes`` times (after 50 to warm up); return its row."""
    patch = way == "patch"
    with _watchers(client, watchers) as seen:
        _writes(client, case, 50, patch=patch)  # warm the connections and caches
        before = meter.snapshot()
        _writes(client, case, writes, patch=patch)
        use = CpuMeter.between(before, meter.snapshot())
        seen_events = sum(seen)
    return {
        "case": case,
        "way": way,
        "statusBytes": len(json.dumps(_status(case, "2026-01-01T00:00:00Z"))),
        "watchers": watchers,
        "writesPerSecond": round(writes / use.seconds, 1),
        "eventsSeen": seen_events,
        "msPerWrite": {
            name: round(1000 * use.by_component[name] / writes, 3)
            for name in ("kube-apiserver", "etcd", "bench process")
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--writes", type=int, default=1000)
    parser.add_argument("--watchers", type=int, default=2)
    args = parser.parse_args(argv)
    with stack(cluster="real") as bench:
        client = kube.KubeClient(kube.load_api_client(str(bench.cluster.kubeconfig)))
        client.request("POST", "/api/v1/namespaces", body={"metadata": {"name": NAMESPACE}})
        manifest = analysis_manifest(
            "subject", NAMESPACE, metrics=[gauge_metric("latency", 0.3)], interval="60s"
        )
        client.request("POST", kube.analyses_path(NAMESPACE), body=manifest)
        pids = {k: v for k, v in server_pids(bench).items() if k in ("kube-apiserver", "etcd")}
        meter = CpuMeter(pids)
        for watchers in (0, args.watchers):
            for case in ("minimal", "terse", "threshold", "sequential"):
                row = _measure(client, meter, case, writes=args.writes, watchers=watchers)
                print(json.dumps(row), flush=True)
        row = _measure(
            client, meter, "threshold", writes=args.writes, watchers=args.watchers, way="patch"
        )
        print(json.dumps(row), flush=True)
        with _crd_without_rules(client):
            row = _measure(
                client,
                meter,
                "threshold",
                writes=args.writes,
                watchers=args.watchers,
                way="no-rules",
            )
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
