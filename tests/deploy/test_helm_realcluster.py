"""The chart installed, upgraded and uninstalled by Helm on a real kube-apiserver of its own.

A fresh control plane (no CRD, no Sentinel objects: the session's clusters hold deploy/'s, which
Helm would rightly refuse to adopt) gets what docs/operations.md ("Helm") says to do: the
labelled Namespace from deploy/base/namespace.yaml, then ``helm install`` (server-side apply).
Before that, every mode's rendering with every value set is validated by the API server itself:
``kubectl apply --dry-run=server --validate=strict``, which checks each object against the
OpenAPI schema that server serves for its kinds (the official one, of this Kubernetes version)
and refuses unknown or duplicate fields — and the restricted Pod Security admission warns about
any Pod it would refuse. The Prometheus Operator's kinds (``monitoring.enabled``) are left out:
their CRDs are not the Kubernetes API's and are not installed here (tests/deploy/test_monitoring.py
checks those objects).

Install creates every object of the release and the CRD from the chart's ``crds/``; upgrade with
a changed value renames the settings ConfigMap and rolls the Deployment onto it; uninstall
removes every object of the release and, as Helm does for ``crds/``, leaves the CRD.

The operator the chart installs then runs: its Deployment and ConfigMap as Helm stored them,
with the image and Prometheus the chart's values name, are run from the image ``make image``
builds as the kubelet would run them (``tests/deploy/image.py``, the machinery of
test_image_incluster.py: a real TokenRequest token of the chart's ServiceAccount, the cluster's
CA), and the operator pauses a real Deployment under the chart's RBAC and admission policy.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testkit.clusters import wait_crd_served
from testkit.manifests import gauge_metric, to_yaml
from testkit.metrics_app import GaugeSetter
from testkit.paths import DEPLOY_DIR
from testkit.ports import free_port
from testkit.prometheus import PrometheusServer
from testkit.realcluster import RealCluster
from testkit.waiting import wait_until
from tests.deploy.helm import CHART, HOME, Helm
from tests.deploy.image import (
    Pod,
    fresh_volume,
    operator_pausing,
    run,
    service_account,
)
from tests.deploy.test_helm import EVERYTHING

pytestmark = pytest.mark.realcluster

# The namespaces the `namespaced` mode binds Roles in, by default and with every value set.
TEAMS = ("team-a", "team-b", "payments")
RELEASE = "sentinel"
CRD = "rolloutanalyses.sentinel.example.com"


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealCluster]:
    """A control plane of the module's own."""
    with RealCluster(tmp_path_factory.mktemp("helm-realcluster")) as cluster:
        cluster.kubectl("apply", "-f", str(DEPLOY_DIR / "base" / "namespace.yaml"))
        for team in TEAMS:
            cluster.kubectl("create", "namespace", team)
        yield cluster


@pytest.fixture(scope="module")
def helm(real: RealCluster, tmp_path_factory: pytest.TempPathFactory) -> Helm:
    return Helm(tmp_path_factory.mktemp("helm"), kubeconfig=real.kubeconfig)


def _key(obj: dict[str, Any]) -> tuple[str, str, str]:
    return obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"]


def _exists(real: RealCluster, obj: dict[str, Any]) -> bool:
    kind, namespace, name = _key(obj)
    where = ["-n", namespace] if namespace else []
    group = obj["apiVersion"].split("/")[0] if "/" in obj["apiVersion"] else ""
    resource = f"{kind}.{group}" if group else kind
    found = real.kubectl("get", resource, name, *where, "-o", "name", check=False)
    assert found.returncode == 0 or "NotFound" in found.stderr, found.stderr
    return found.returncode == 0


@pytest.mark.parametrize("mode", ["single", "ha", "namespaced"])
def test_every_rendering_passes_the_api_servers_strict_validation(
    real: RealCluster, helm: Helm, mode: str
) -> None:
    values = {**EVERYTHING, "mode": mode, "monitoring": {"enabled": False}}
    objects = helm.template(values)
    assert {o["kind"] for o in objects} >= {"CustomResourceDefinition", "Deployment", "Secret"}
    result = real.kubectl(
        "apply", "--dry-run=server", "--validate=strict", "-f", "-",
        input=to_yaml(*objects), check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Warning" not in result.stderr, result.stderr
    # A dry run stores nothing: the lifecycle below starts from an empty namespace.
    assert not _exists(real, next(o for o in objects if o["kind"] == "Deployment"))


def test_install_upgrade_uninstall(real: RealCluster, helm: Helm, tmp_path: Path) -> None:
    assert real.kubectl("get", "crd", CRD, check=False).returncode != 0, "a fresh cluster"
    objects = [o for o in helm.template({}) if o["kind"] != "CustomResourceDefinition"]
    installed = helm.run("install", RELEASE, str(CHART), "--namespace", HOME, "--server-side=true")
    print(
        f"$ helm install {RELEASE} charts/rollout-sentinel --namespace {HOME}\n{installed.stdout}"
    )
    (tmp_path / "install.txt").write_text(installed.stdout)
    assert "STATUS: deployed" in installed.stdout
    # The CRD came from the chart's crds/, before the templates.
    wait_crd_served(real)
    missing = [_key(o) for o in objects if not _exists(real, o)]
    assert not missing, missing
    listed = json.loads(helm.run("list", "--namespace", HOME, "--output", "json").stdout)
    assert [(r["name"], r["status"]) for r in listed] == [(RELEASE, "deployed")]

    # Upgrade with a changed setting and resources: the ConfigMap is renamed after its content
    # (the old one removed), the Deployment moves onto it — which is what rolls its Pods.
    (before,) = [o for o in objects if o["kind"] == "ConfigMap"]
    upgraded = helm.run(
        "upgrade", RELEASE, str(CHART), "--namespace", HOME, "--server-side=true",
        "--set", "config.SENTINEL_HISTORY_RETENTION=7d",
        "--set", "resources.operator.requests.cpu=200m",
        "--set", "resources.operator.requests.memory=256Mi",
    )  # fmt: skip
    assert "REVISION: 2" in upgraded.stdout
    assert not _exists(real, before)
    operator = _get(real, "deployment", "rollout-sentinel-operator")
    (container,) = operator["spec"]["template"]["spec"]["containers"]
    assert container["resources"]["requests"] == {"cpu": "200m", "memory": "256Mi"}
    settings = _get(real, "configmap", container["envFrom"][0]["configMapRef"]["name"])
    assert settings["data"]["SENTINEL_HISTORY_RETENTION"] == "7d"
    assert settings["metadata"]["name"] != before["metadata"]["name"]

    uninstalled = _uninstall(real, helm, RELEASE, objects)
    assert f'release "{RELEASE}" uninstalled' in uninstalled
    assert not _exists(real, settings)
    # Helm never deletes what it installed from crds/ (deleting it would delete every analysis).
    assert real.kubectl("get", "crd", CRD, check=False).returncode == 0
    assert real.kubectl("get", "namespace", HOME, check=False).returncode == 0


def _uninstall(real: RealCluster, helm: Helm, release: str, objects: list[dict[str, Any]]) -> str:
    """``helm uninstall``, then wait until every object of the release is gone.

    The claim is the exception: the API server gives it the ``kubernetes.io/pvc-protection``
    finalizer, which only kube-controller-manager's pvc-protection controller removes, and
    realcluster does not run that controller (docs/realcluster.md). So for the claim, Helm's
    deletion shows as its deletion timestamp; the finalizer is then removed here, as that
    controller would once no Pod uses the claim, so that the next install finds the name free.
    """
    out = helm.run("uninstall", release, "--namespace", HOME).stdout
    claims = [o for o in objects if o["kind"] == "PersistentVolumeClaim"]
    for claim in claims:
        stored = _get(real, "persistentvolumeclaim", claim["metadata"]["name"])
        assert stored["metadata"].get("deletionTimestamp"), stored["metadata"]
        real.kubectl(
            "patch", "persistentvolumeclaim", claim["metadata"]["name"], "-n", HOME,
            "--type=merge", "-p", '{"metadata":{"finalizers":null}}',
        )  # fmt: skip
    wait_until(
        lambda: not [_key(o) for o in objects if _exists(real, o)],
        timeout=60,
        interval=0.5,
        what=f"every object of the release {release} deleted",
    )
    return out


def _get(real: RealCluster, kind: str, name: str) -> dict[str, Any]:
    return dict(json.loads(real.kubectl("get", kind, name, "-n", HOME, "-o", "json").stdout))


@pytest.mark.slow
def test_the_charts_operator_runs_from_the_image(
    real: RealCluster,
    helm: Helm,
    image: str,
    prometheus: PrometheusServer,
    gauge: GaugeSetter,
    case: str,
    tmp_path: Path,
) -> None:
    release = "incluster"
    helm.run(
        "install", release, str(CHART), "--namespace", HOME,
        "--set", "image.repository=localhost/rollout-sentinel", "--set", "image.tag=0.1.0",
        "--set", f"config.SENTINEL_PROMETHEUS_URL={prometheus.url}",
    )  # fmt: skip
    installed = [o for o in helm.template({}) if o["kind"] != "CustomResourceDefinition"]
    pods: list[Pod] = []
    target = f"helm-{uuid.uuid4().hex[:6]}"
    real.kubectl("create", "namespace", target)
    try:
        with fresh_volume() as claim:
            secret = {"SENTINEL_SECRET_KEY": uuid.uuid4().hex * 2}
            for component in ("web", "operator"):
                stored = _get(real, "deployment", f"rollout-sentinel-{component}")
                spec = stored["spec"]["template"]["spec"]
                assert {c["image"] for c in spec["containers"]} == {
                    "localhost/rollout-sentinel:0.1.0"
                }
                name = spec["containers"][0]["envFrom"][0]["configMapRef"]["name"]
                config = _get(real, "configmap", name)["data"]
                assert config["SENTINEL_PROMETHEUS_URL"] == prometheus.url
                pod = Pod.of(
                    stored, config, secret_env=secret, claims={"rollout-sentinel-data": claim}
                )
                pods.append(pod)
            web, operator = pods
            operator.service_account = service_account(
                real, operator.account_name, HOME, tmp_path / "operator"
            )
            # Host network: the manifests' metrics port may be taken on this machine.
            operator.env_overrides = {"SENTINEL_METRICS_ADDR": f"127.0.0.1:{free_port()}"}
            run(web, "migrate", image=image)
            with operator_pausing(
                real, operator, image=image, namespace=target, gauge=gauge,
                metric=gauge_metric(case, 0.5), record=tmp_path / "pause.json",
            ):  # fmt: skip
                pass
    finally:
        for pod in pods:
            pod.remove()
        _uninstall(real, helm, release, installed)
        real.kubectl("delete", "namespace", target, "--wait=false", check=False)
