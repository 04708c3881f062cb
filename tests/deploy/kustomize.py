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
OVERLAYS = ("single", "ha", "namespaced")
HOME = "rollout-sentinel"  # the namespace of deploy/base
OPERATOR_ACCOUNT = "rollout-sentinel-operator"
WEB_ACCOUNT = "rollout-sentinel-web"
# Kinds the devcluster double does not serve (no networking.k8s.io, no admission policies):
# devcluster gets the overlays without them; realcluster gets everything
# (tests/deploy/test_hardening.py, tests/realcluster/test_admission_policy.py).
NOT_ON_DEVCLUSTER = frozenset(
    {"NetworkPolicy", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}
)


def render(cluster: Cluster, directory: str) -> list[dict[str, Any]]:
    """Render ``deploy/<directory>`` with kubectl's built-in kustomize; return the objects."""
    text = cluster.kubectl("kustomize", str(DEPLOY / directory)).stdout
    return [doc for doc in yaml.safe_load_all(text) if doc]


def for_devcluster(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return ``objects`` without the kinds devcluster does not serve."""
    return [obj for obj in objects if obj["kind"] not in NOT_ON_DEVCLUSTER]


@dataclass(frozen=True)
class Deployed:
    """The cluster with the ``ha`` overlay applied, and the operator's identity in it."""

    cluster: Cluster
    admin: kube.KubeClient
    token: str
    kubeconfig: Path
    # What was applied: the whole overlay on the real cluster, minus NOT_ON_DEVCLUSTER on dev.
    objects: tuple[dict[str, Any], ...]
