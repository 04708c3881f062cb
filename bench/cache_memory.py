"""What the operator's caches cost in memory: N Deployments and 3N ReplicaSets no analysis targets.

The operator lists and watches every Deployment, StatefulSet, DaemonSet, ReplicaSet and
ControllerRevision in its scope into memory, stripped (docs/architecture.md#reads-from-caches).
This loads a namespace with ``--deployments`` N Deployments (``replicas: 0``, a pod template of
a realistic size) and 2N more ReplicaSets (their controller makes the first N), starts one
``runoperator`` scoped to an empty namespace and one scoped to the loaded one, and reports the
PSS of each operator's main process (where the caches live) and of its whole tree once its
caches have listed. Nothing else runs in the operators: no analysis exists.

    .venv/bin/python -m bench.cache_memory --deployments 200            # real control plane
    .venv/bin/python -m bench.cache_memory --deployments 10000 --json   # the sized run

On ``--cluster dev`` the 2N ReplicaSets are loaded too but the first N are not made (devcluster
plays no Deployment controller). ``--breakdown`` also lists the loaded namespace into the
operator's own ``Caches`` inside this process, traced (``_breakdown``): what the objects kept
take, and the list's transient peak above them (docs/performance.md#reads-from-caches).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import time
import tracemalloc
from pathlib import Path
from typing import Any

from bench.cpu import tree_memory
from bench.harness import ApiSession, BenchOperator, create_all, create_namespace, stack
from sentinel_cluster import kube
from sentinel_operator.caches import Caches
from testkit.clusters import Cluster
from testkit.manifests import deployment_manifest
from testkit.waiting import wait_until


def _template(name: str) -> dict[str, Any]:
    """Return a pod template of the size a service's usually is (env, resources, probes)."""
    container = {
        "name": "app",
        "image": "registry.example.com/shop/checkout:1.27.3",
        "ports": [{"containerPort": 8080, "name": "http"}],
        "env": [
            {"name": f"SETTING_{index}", "value": f"value-{index}-" + "x" * 24}
            for index in range(20)
        ],
        "resources": {
            "requests": {"cpu": "100m", "memory": "128Mi"},
            "limits": {"cpu": "500m", "memory": "256Mi"},
        },
        "readinessProbe": {"httpGet": {"path": "/ready", "port": "http"}, "periodSeconds": 5},
        "livenessProbe": {"httpGet": {"path": "/live", "port": "http"}, "periodSeconds": 10},
    }
    return {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container]}}


def _deployment(name: str, namespace: str) -> dict[str, Any]:
    manifest = deployment_manifest(name, namespace, replicas=0)
    manifest["spec"]["template"] = _template(name)
    return manifest


def _replicaset(name: str, namespace: str) -> dict[str, Any]:
    # Selected by a label no Deployment selects, so that no controller adopts it.
    labels = {"app": name, "history": "kept"}
    template = _template(name)
    template["metadata"]["labels"] = labels
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"replicas": 0, "selector": {"matchLabels": labels}, "template": template},
    }


def _count(api: ApiSession, path: str) -> int:
    total, token = 0, ""
    while True:
        page = api.request("GET", f"{path}?limit=500" + (f"&continue={token}" if token else ""))
        total += len(page.get("items") or [])
        token = (page.get("metadata") or {}).get("continue") or ""
        if not token:
            return total


def _measure(operator: BenchOperator, namespace: str, replicasets: int) -> dict[str, float]:
    """Start ``operator``, wait until its caches listed, return its memory in MB."""
    operator.start()
    listed = f"cache /apis/apps/v1/namespaces/{namespace}/replicasets: listed "
    wait_until(
        lambda: listed in operator.log_path.read_text(errors="replace"),
        timeout=300,
        interval=0.5,
        what=f"the operator's caches listed\n{operator.log}",
    )
    # Settle: the list's garbage collected, the watch running.
    time.sleep(5)
    main = Path(f"/proc/{operator.pid}/smaps_rollup").read_text()
    pss = next(float(line.split()[1]) for line in main.splitlines() if line.startswith("Pss:"))
    rss_tree, pss_tree = tree_memory(operator.pid)
    operator.stop()
    return {
        "main_pss_mb": round(pss / 1024, 1),
        "tree_pss_mb": round(pss_tree, 1),
        "tree_rss_mb": round(rss_tree, 1),
        "replicasets_listed": float(replicasets),
    }


def _listed(cluster: Cluster, namespace: str) -> Caches:
    caches = Caches(
        kube.KubeClient(cluster.api_client()), namespaces=[namespace], analysis=lambda *_: None
    )
    for informer in caches.all():
        informer.relist()
    return caches


def _breakdown(cluster: Cluster, loaded: str, empty: str, objects: int) -> dict[str, float]:
    """List ``loaded`` into the operator's caches in this process, traced; return the memory
    of the objects kept, per object, and the list's transient peak above them.

    The resident growth of this process is not a measure (it reuses what the loading freed);
    the operator's main process above is.
    """
    # Imports, the client and its connection paid for first, on a namespace with nothing in it.
    _listed(cluster, empty)
    gc.collect()
    tracemalloc.start()
    caches = _listed(cluster, loaded)
    gc.collect()
    kept, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del caches
    return {
        "breakdown_kept_kb_per_object": round(kept / 1024 / objects, 2),
        "breakdown_peak_above_kept_mb": round((peak - kept) / 2**20, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deployments", type=int, default=200)
    parser.add_argument("--cluster", choices=("real", "dev"), default="real")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--breakdown", action="store_true", help="also say where the growth goes (in-process)"
    )
    options = parser.parse_args()
    if options.deployments < 1:
        parser.error("--deployments must be at least 1")
    say = (lambda _: None) if options.json else print
    with contextlib.ExitStack() as exits:
        bench = exits.enter_context(stack(options.workdir, cluster=options.cluster))
        api = ApiSession(bench.cluster)
        loaded, empty = "cached", "empty"
        create_namespace(api, loaded)
        create_namespace(api, empty)
        n = options.deployments
        say(f"creating {n} Deployments on {bench.kind}")
        create_all(api, loaded, [_deployment(f"svc-{i}", loaded) for i in range(n)], 0)
        say(f"creating {2 * n} more ReplicaSets")
        create_all(api, loaded, [_replicaset(f"old-{i}", loaded) for i in range(2 * n)], 0)
        path = f"/apis/apps/v1/namespaces/{loaded}/replicasets"
        # The real Deployment controller makes one more for each Deployment.
        made = 3 * n if options.cluster == "real" else 2 * n
        wait_until(lambda: _count(api, path) >= made, timeout=600, interval=2)
        replicasets = _count(api, path)
        results = {}
        for name, namespace in (("empty", empty), ("loaded", loaded)):
            say(f"starting runoperator scoped to {namespace!r}")
            operator = BenchOperator(
                bench.workdir / f"operator-{name}",
                stack=bench,
                namespaces=[namespace],
                workers=options.workers,
                identity=f"operator-{name}",
                lease_name=f"bench-cache-{name}",
            )
            results[name] = _measure(operator, namespace, replicasets if name == "loaded" else 0)
        objects = n + replicasets
        if options.breakdown:
            say("listing the loaded namespace into caches in this process")
            results["breakdown"] = _breakdown(bench.cluster, loaded, empty, objects)
        grown = results["loaded"]["main_pss_mb"] - results["empty"]["main_pss_mb"]
        report = {
            "cluster": bench.kind,
            "deployments": n,
            "replicasets": replicasets,
            **{
                f"{name}_{key}": value
                for name, found in results.items()
                if name != "breakdown"
                for key, value in found.items()
            },
            **results.get("breakdown", {}),
            "cache_mb": round(grown, 1),
            "cache_kb_per_object": round(grown * 1024 / objects, 2),
        }
    if options.json:
        print(json.dumps(report))
        return
    print(
        f"{n} Deployments and {replicasets} ReplicaSets cached: main process PSS "
        f"{results['empty']['main_pss_mb']} -> {results['loaded']['main_pss_mb']} MB "
        f"(+{grown:.1f} MB, {report['cache_kb_per_object']} KB per object); whole operator PSS "
        f"{results['empty']['tree_pss_mb']} -> {results['loaded']['tree_pss_mb']} MB"
    )
    if options.breakdown:
        print("in this process, KB per object:", json.dumps(results["breakdown"]))


if __name__ == "__main__":
    main()
