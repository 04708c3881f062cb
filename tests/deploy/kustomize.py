"""The ``deploy/`` tree as the deploy tests see it: overlays rendered by kubectl's kustomize.

``render`` returns the objects of ``deploy/<directory>``; ``Deployed`` is the session cluster the
``deployed`` fixture (``tests/deploy/conftest.py``) applied the ``ha`` overlay to, with the
operator's ServiceAccount token and a kubeconfig authenticating as it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from sentinel_cluster import kube
from testkit.clusters import Cluster
from testkit.paths import DEPLOY_DIR

DEPLOY = DEPLOY_DIR
OVERLAYS = ("single", "ha")
HOME = "rollout-sentinel"  # the namespace and ServiceAccount name of deploy/base


def render(cluster: Cluster, directory: str) -> list[dict[str, Any]]:
    """Render ``deploy/<directory>`` with kubectl's built-in kustomize; return the objects."""
    text = cluster.kubectl("kustomize", str(DEPLOY / directory)).stdout
    return [doc for doc in yaml.safe_load_all(text) if doc]


@dataclass(frozen=True)
class Deployed:
    """The cluster with the ``ha`` overlay applied, and the operator's identity in it."""

    cluster: Cluster
    admin: kube.KubeClient
    token: str
    kubeconfig: Path
