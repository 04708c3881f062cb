"""One ``KubeClient`` per kubeconfig file, built again when the file changes.

The web app's two callers share it: ``analyses.services`` (its writes to the cluster) and
``accounts.access`` (its SubjectAccessReviews). A rewritten kubeconfig (a restarted cluster,
rotated credentials) is read again on the next call; the client of the previous version is
dropped. Each caller says what an unloadable configuration means to it.
"""

from __future__ import annotations

import os
import threading

from sentinel_cluster import kube

# A person is waiting for the answer: give up sooner than the operator's 10 s.
WEB_TIMEOUT = 5.0

_clients: dict[tuple[str | None, int], kube.KubeClient] = {}
_lock = threading.Lock()


def for_kubeconfig(path: str | None) -> kube.KubeClient:
    """Return the client for ``path`` (None: the default kubeconfig or the in-cluster one).

    Raise ``kube.KubeError`` when no configuration can be loaded.
    """
    try:
        stamp = os.stat(path).st_mtime_ns if path else 0
    except OSError:
        stamp = -1
    key = (path, stamp)
    with _lock:
        client = _clients.get(key)
        if client is None:
            client = kube.KubeClient(kube.load_api_client(path), timeout=WEB_TIMEOUT)
            _clients.clear()
            _clients[key] = client
    return client
