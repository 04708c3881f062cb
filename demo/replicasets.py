"""Tell the demo's checkout app which pods are new and which old, on realcluster.

The two sides are those ``compare`` judges (docs/status.md#new-pods-against-old-pods-compare).
No kubelet runs pods there, so the app plays their traffic: ``HashFollower`` lists the
Deployment's ReplicaSets every two seconds (the product's own ``compared_hashes``, the rule the
operator uses) and hands the hashes to ``CheckoutApp.set_replicasets``. After ``kubectl set
image`` the new ReplicaSet's pods serve the regressed traffic and the old ones stay healthy,
so ``latency-vs-old`` compares two real hashes. On devcluster (no ReplicaSets) it is not
started, and the metric stays ``Inconclusive/NoComparison``, saying why.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from sentinel_cluster import kube
from sentinel_cluster.replicasets import compared_hashes

log = logging.getLogger(__name__)

SetHashes = Callable[[str | None, tuple[str, ...]], None]


class HashFollower:
    """Poll a Deployment's ReplicaSets and report its new and old pod-template hashes."""

    def __init__(
        self, client: kube.KubeClient, namespace: str, name: str, report: SetHashes
    ) -> None:
        self._client, self._namespace, self._name = client, namespace, name
        self._report = report
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="demo-replicasets", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while True:
            try:
                path = kube.deployment_path(self._namespace, self._name)
                deployment = self._client.request("GET", path)
                self._report(*compared_hashes(self._client, deployment))
            except kube.KubeError as exc:
                # The cluster restarting or the Deployment gone: try again at the next tick.
                log.debug("demo: cannot list the ReplicaSets: %s", exc)
            if self._stop.wait(2.0):
                return
