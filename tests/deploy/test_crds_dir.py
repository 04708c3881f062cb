"""``crds/`` as a user applies it: ``kubectl apply -f crds/`` and as a kustomization.

The directory is a user's first command, so both ways must work with the real kubectl: ``-f``
applies every manifest file in it (only the CRD), ``-k`` reads its ``Kustomization`` file, which
``deploy/base`` includes too.
"""

from __future__ import annotations

from testkit.clusters import NewCluster, wait_crd_served
from testkit.manifests import CRD_NAME
from testkit.paths import CRD_DIR


def test_kubectl_apply_f_crds_applies_the_crd_and_apply_k_agrees(new_cluster: NewCluster) -> None:
    # A fresh cluster of each kind: the session ones hold the CRD already.
    cluster = new_cluster("crds")
    applied = cluster.kubectl("apply", "-f", f"{CRD_DIR}/", check=False)
    assert applied.returncode == 0, applied.stderr
    assert applied.stdout.splitlines() == [
        f"customresourcedefinition.apiextensions.k8s.io/{CRD_NAME} created"
    ]
    wait_crd_served(cluster)
    assert cluster.kubectl("get", "rolloutanalyses", "-A").returncode == 0

    again = cluster.kubectl("apply", "-k", str(CRD_DIR))
    assert again.stdout.splitlines() == [
        f"customresourcedefinition.apiextensions.k8s.io/{CRD_NAME} unchanged"
    ]
