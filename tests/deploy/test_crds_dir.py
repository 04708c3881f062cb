"""``crds/`` as a user applies it: ``kubectl apply -f crds/`` and as a kustomization.

The directory is a user's first command, so both ways must work with the real kubectl: ``-f``
applies every manifest file in it (only the CRD), ``-k`` reads its ``Kustomization`` file, which
``deploy/base`` includes too.
"""

from __future__ import annotations

from pathlib import Path

from testkit.clusters import wait_crd_served
from testkit.devcluster import DevCluster
from testkit.manifests import CRD_NAME
from testkit.paths import CRD_DIR


def test_kubectl_apply_f_crds_applies_the_crd_and_apply_k_agrees(tmp_path: Path) -> None:
    with DevCluster(tmp_path / "crds") as cluster:
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
