"""``crds/`` as a user applies it: ``kubectl apply -f crds/`` and as a kustomization.

The directory is a user's first command, so both ways must work with the real kubectl: ``-f``
applies every manifest file in it (the analysis CRD and the two template CRDs, not
``generate.py``), ``-k`` reads its ``Kustomization`` file, which ``deploy/base`` includes too.
"""

from __future__ import annotations

from testkit.clusters import NewCluster, wait_crd_served
from testkit.manifests import CRD_NAME
from testkit.paths import CRD_DIR

TEMPLATE_CRD_NAMES = (
    "rolloutanalysistemplates.sentinel.example.com",
    "clusterrolloutanalysistemplates.sentinel.example.com",
)


def test_kubectl_apply_f_crds_applies_the_crd_and_apply_k_agrees(new_cluster: NewCluster) -> None:
    # A fresh cluster of each kind: the session ones hold the CRD already.
    cluster = new_cluster("crds")
    applied = cluster.kubectl("apply", "-f", f"{CRD_DIR}/", check=False)
    assert applied.returncode == 0, applied.stderr
    names = [CRD_NAME, *TEMPLATE_CRD_NAMES]
    assert sorted(applied.stdout.splitlines()) == sorted(
        f"customresourcedefinition.apiextensions.k8s.io/{name} created" for name in names
    )
    wait_crd_served(cluster)
    assert cluster.kubectl("get", "rolloutanalyses", "-A").returncode == 0
    assert cluster.kubectl("get", "ratmpl,cratmpl", "-A").returncode == 0

    again = cluster.kubectl("apply", "-k", str(CRD_DIR))
    assert sorted(again.stdout.splitlines()) == sorted(
        f"customresourcedefinition.apiextensions.k8s.io/{name} unchanged" for name in names
    )
