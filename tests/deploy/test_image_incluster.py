"""The image's operator and web app in in-cluster mode, against the real control plane (and
devcluster).

As the kubelet would run the ``single`` overlay's Pods: each container gets only what a Pod
gets — its ServiceAccount's token from a real TokenRequest (``kubectl create token``) for
deploy/'s account, the cluster's CA and the namespace at
/var/run/secrets/kubernetes.io/serviceaccount, ``KUBERNETES_SERVICE_HOST``/``PORT`` — plus the
overlay's ConfigMap with the test's Prometheus. They share the host's network, so the loopback
API server and Prometheus are reachable; that is also why the operator's metrics and gunicorn
listen on free loopback ports here instead of the manifests' 9100 and 8000.

The operator evaluates an analysis against the real Prometheus and pauses a real Deployment
(under deploy/'s RBAC and admission policy, applied by ``deployed``); the web app resumes it
through the REST API with the web account's token.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from sentinel_cluster import kube
from testkit.manifests import gauge_metric
from testkit.metrics_app import GaugeSetter
from testkit.ports import free_port
from testkit.prometheus import PrometheusServer
from testkit.waiting import wait_until
from tests.deploy.image import (
    Pod,
    condition,
    config_map,
    deployment,
    fresh_volume,
    logs,
    operator_pausing,
    run,
    service_account,
    started,
    wait_running,
)
from tests.deploy.kustomize import HOME, Deployed, render

HOST = "rollout-sentinel-web.rollout-sentinel.svc"
SUPERUSER = "platform-admin"


@pytest.fixture
def claim() -> Iterator[str]:
    with fresh_volume() as name:
        yield name


def _pods(
    deployed: Deployed, prometheus: PrometheusServer, claim: str, tmp_path: Path
) -> dict[str, Pod]:
    single = render(deployed.cluster, "overlays/single")
    config = {**config_map(single), "SENTINEL_PROMETHEUS_URL": prometheus.url}
    secret = {"SENTINEL_SECRET_KEY": uuid.uuid4().hex * 2}
    pods = {}
    for component in ("operator", "web"):
        template = deployment(single, f"rollout-sentinel-{component}")
        pod = Pod.of(template, config, secret_env=secret, claims={"rollout-sentinel-data": claim})
        pod.service_account = service_account(
            deployed.cluster, pod.account_name, HOME, tmp_path / component
        )
        pods[component] = pod
    # Host network: the manifests' ports may be taken on this machine.
    pods["operator"].env_overrides = {"SENTINEL_METRICS_ADDR": f"127.0.0.1:{free_port()}"}
    return pods


@pytest.mark.slow
def test_operator_pauses_and_web_resumes_from_the_image(
    image: str,
    deployed: Deployed,
    prometheus: PrometheusServer,
    gauge: GaugeSetter,
    case: str,
    namespace: str,
    claim: str,
    tmp_path: Path,
) -> None:
    pods = _pods(deployed, prometheus, claim, tmp_path)
    operator, web = pods["operator"], pods["web"]
    admin = deployed.admin
    try:
        run(web, "migrate", image=image)
        with operator_pausing(
            deployed.cluster, operator, image=image, namespace=namespace, gauge=gauge,
            metric=gauge_metric(case, 0.5), record=tmp_path / "pause.json",
        ):  # fmt: skip
            # The web app from the same image resumes it with the web account's token.
            token = _api_token(web, image)
            port = free_port()
            args = list(web.container("web")["args"])
            args[args.index("--bind") + 1] = f"127.0.0.1:{port}"
            gauge(0.1)
            with started(web, "web", image=image, network=["--network", "host"], args=args) as w:
                url = f"http://127.0.0.1:{port}"

                def resumed() -> tuple[requests.Response] | None:
                    # Sent again only while gunicorn does not listen yet: a POST that timed out
                    # may still be served, and a second resume would be answered 409. Wrapped,
                    # since a 4xx/5xx Response is falsy and would be waited on, not reported.
                    try:
                        return (
                            requests.post(
                                f"{url}/api/v1/analyses/{namespace}/checkout/resume/",
                                headers={"Host": HOST, "Authorization": f"Token {token}"},
                                timeout=90,
                            ),
                        )
                    except requests.ConnectionError:
                        return None

                (answer,) = wait_running(w, resumed, "gunicorn answering the resume", timeout=120)
                assert answer.status_code == 200, answer.text
                target = admin.request("GET", kube.deployment_path(namespace, "checkout"))
                assert target["spec"].get("paused") is not True
                analysis = wait_until(
                    lambda: _resumed(admin, namespace), timeout=30, what="RolloutPaused=False"
                )
                print("after the resume:", json.dumps(analysis["status"], indent=2))
                assert "Forbidden" not in logs(w), logs(w)
    finally:
        operator.remove()
        web.remove()


def _resumed(admin: kube.KubeClient, namespace: str) -> dict[str, Any] | None:
    analysis = admin.request("GET", kube.analysis_path(namespace, "checkout"))
    pause = condition(analysis, "RolloutPaused")
    return analysis if pause["status"] == "False" else None


def _api_token(web: Pod, image: str) -> str:
    """Create a superuser and an API token for it with the web Pod's ``manage.py``."""
    manage = ["python", "manage.py"]
    run(web, "web", image=image, args=[*manage, "createsuperuser", "--noinput",
        "--username", SUPERUSER, "--email", "admin@example.com"])  # fmt: skip
    out = run(web, "web", image=image, args=[*manage, "create_api_token", SUPERUSER])
    return out.strip().splitlines()[-1].split()[-1]
