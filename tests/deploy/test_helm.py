"""charts/rollout-sentinel: generated from deploy/ and rendering the same objects.

The chart's data is ``kubectl kustomize`` of each overlay (``charts/generate.py``); these tests
check that the committed chart is what the generator writes from today's deploy/, that
``helm lint`` passes, and that ``helm template`` gives, for each mode and each set of values,
exactly the objects kustomize gives for the same settings asked of deploy/ with an overlay
(``tests/deploy/helm.py``, ``as_kustomization``): image, pull policy, settings, resources, the
providers file of deploy/overlays/providers, the notification channels Secret, monitoring, the
library of cluster templates (deploy/components/template-library) — the
CRD included, from the chart's ``crds/``, and the Namespace left out (it is Helm's to create).
Helm is built from the Go module proxy at a pinned version (``charts/helm.sh``).
"""

from __future__ import annotations

import filecmp
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from testkit.paths import DEPLOY_DIR
from tests.deploy.helm import (
    CHART,
    GENERATE,
    HOME,
    PROVIDER_SECRETS,
    PROVIDERS,
    Helm,
    as_kustomization,
    kustomize,
    normal,
)

NOTIFY = """channels:
  - name: ops-mail
    url: mailtos://user:password@smtp.example.com?to=ops@example.com&from=sentinel@example.com
    events: [Paused, Failing]
    default: true
"""
# Every value the chart has, set. The public URL's `&` and `<>` are escaped in the JSON both
# kustomize and the chart hash to name the ConfigMap; the worker count is a number in YAML.
EVERYTHING: dict[str, Any] = {
    "image": {
        "repository": "registry.example/rollout-sentinel",
        "tag": "9.9.9",
        "pullPolicy": "Always",
    },
    "config": {
        "SENTINEL_PROMETHEUS_URL": "http://prometheus.example:9090",
        "SENTINEL_PUBLIC_URL": "https://sentinel.example/?from=helm&to=<all>",
        "SENTINEL_Q_WORKERS": 3,
    },
    "resources": {
        "web": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}},
        "operator": {"requests": {"cpu": "50m", "memory": "128Mi"}},
        "migrate": {"limits": {"memory": "256Mi"}},
    },
    "providers": {"file": (PROVIDERS / "providers.yaml").read_text(), "secrets": PROVIDER_SECRETS},
    "notifications": {"config": NOTIFY},
    "monitoring": {"enabled": True},
    "templates": {"library": False},
    "webIngress": {"namespace": "traefik"},
    # mode namespaced: one namespace kept, one dropped, one new.
    "namespaces": ["team-b", "payments"],
}
SCENARIOS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "everything": EVERYTHING,
    "existing-notify-secret": {"notifications": {"existingSecret": "team-channels"}},
}


def test_chart_is_generated_from_deploy(tmp_path: Path) -> None:
    fresh = tmp_path / "chart"
    subprocess.run([sys.executable, str(GENERATE), str(fresh)], check=True, capture_output=True)
    for sub in ("files", "crds"):
        compared = filecmp.dircmp(fresh / sub, CHART / sub)
        assert not (compared.diff_files or compared.left_only or compared.right_only), (
            f"charts/rollout-sentinel/{sub} is stale: run python charts/generate.py"
        )
        for name in compared.common_files:
            assert (fresh / sub / name).read_bytes() == (CHART / sub / name).read_bytes(), name


def test_helm_lint(tmp_path: Path) -> None:
    helm = Helm(tmp_path)
    for mode in ("single", "ha", "namespaced"):
        out = helm.run("lint", str(CHART), "--namespace", HOME, "--set", f"mode={mode}")
        assert "0 chart(s) failed" in out.stdout


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("mode", ["single", "ha", "namespaced"])
def test_helm_template_renders_what_kustomize_renders(
    mode: str, scenario: str, tmp_path: Path
) -> None:
    values = {"mode": mode, **SCENARIOS[scenario]}
    from_helm = Helm(tmp_path / "helm").template(values)
    expected = kustomize(as_kustomization(values, tmp_path / "overlay"))
    assert [o for o in expected if o["kind"] == "Namespace"], "deploy/ has its Namespace"
    expected = [o for o in expected if o["kind"] != "Namespace"]
    if values.get("monitoring", {}).get("enabled"):
        expected += kustomize(DEPLOY_DIR / "monitoring")
    assert normal(from_helm) == normal(expected)


def test_values_reach_the_objects(tmp_path: Path) -> None:
    """What the comparison above takes for granted: the values changed something."""
    plain = {(o["kind"], o["metadata"]["name"]): o for o in Helm(tmp_path / "a").template({})}
    changed = {
        (o["kind"], o["metadata"]["name"]): o for o in Helm(tmp_path / "b").template(EVERYTHING)
    }
    assert {"PodMonitor", "ServiceMonitor", "PrometheusRule"} <= {
        o["kind"] for o in changed.values()
    }
    (settings,) = [
        o for o in changed.values() if o["kind"] == "ConfigMap" and "DATABASE_URL" in o["data"]
    ]
    (before,) = [o for o in plain.values() if o["kind"] == "ConfigMap"]
    assert settings["metadata"]["name"] != before["metadata"]["name"]
    assert settings["data"]["SENTINEL_Q_WORKERS"] == "3"
    assert (
        settings["data"]["SENTINEL_PROVIDERS_FILE"]
        == "/etc/rollout-sentinel/providers/providers.yaml"
    )
    (notify,) = [o for o in changed.values() if o["kind"] == "Secret"]
    assert notify["metadata"]["name"].startswith("rollout-sentinel-notify-")
    operator = changed["Deployment", "rollout-sentinel-operator"]["spec"]["template"]["spec"]
    (container,) = operator["containers"]
    assert container["image"] == "registry.example/rollout-sentinel:9.9.9"
    assert container["imagePullPolicy"] == "Always"
    assert container["resources"] == {"requests": {"cpu": "50m", "memory": "128Mi"}}
    assert container["envFrom"][0]["configMapRef"]["name"] == settings["metadata"]["name"]
    volumes = {v["name"]: v for v in operator["volumes"]}
    assert volumes["notify"]["secret"]["secretName"] == notify["metadata"]["name"]
    assert volumes["provider-mimir"]["secret"] == {
        "secretName": "sentinel-provider-mimir",
        "defaultMode": 0o400,
    }
    (web_ingress,) = [
        o
        for o in changed.values()
        if o["kind"] == "NetworkPolicy" and o["metadata"]["name"] == "rollout-sentinel-web-ingress"
    ]
    assert web_ingress["spec"]["ingress"][0]["from"] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "traefik"}}}
    ]
    # templates.library: on by default, the five cluster templates of the component; off, none.
    library = sorted(name for kind, name in plain if kind == "ClusterRolloutAnalysisTemplate")
    assert library == ["envoy-gateway", "http-server", "ingress-nginx", "istio", "linkerd"]
    assert not [kind for kind, _ in changed if kind == "ClusterRolloutAnalysisTemplate"]
    istio = plain["ClusterRolloutAnalysisTemplate", "istio"]
    assert "namespace" not in istio["metadata"]
    assert {m["name"] for m in istio["spec"]["metrics"]} == {"istio-error-rate", "istio-latency"}
    namespaced = Helm(tmp_path / "c").template({**EVERYTHING, "mode": "namespaced"})
    bindings = [o["metadata"] for o in namespaced if o["kind"] == "RoleBinding"]
    watched = sorted((m["namespace"], m["name"]) for m in bindings if m["namespace"] != HOME)
    assert watched == [
        ("payments", "rollout-sentinel-operator"),
        ("payments", "rollout-sentinel-web"),
        ("team-b", "rollout-sentinel-operator"),
        ("team-b", "rollout-sentinel-web"),
    ]
    (settings,) = [
        o for o in namespaced if o["kind"] == "ConfigMap" and "DATABASE_URL" in o["data"]
    ]
    assert settings["data"]["SENTINEL_NAMESPACES"] == "team-b,payments"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--set", "mode=cluster"],
            "at '/mode': value must be one of 'single', 'ha', 'namespaced'",
        ),
        (["--set", "modee=ha"], "at '': additional properties 'modee' not allowed"),
        (
            ["--set", "templates.library=yes"],
            "at '/templates/library': got string, want boolean",
        ),
        (
            ["--set", "webIngress.namespace=Ingress_Nginx"],
            "at '/webIngress/namespace': 'Ingress_Nginx' does not match pattern",
        ),
        (
            [
                "--set",
                "providers.secrets[0].name=Thanos",
                "--set",
                "providers.secrets[0].secretName=t",
            ],
            "at '/providers/secrets/0/name': 'Thanos' does not match pattern",
        ),
        (
            ["--namespace", "sentinel"],
            "install into the namespace rollout-sentinel (helm install --namespace "
            'rollout-sentinel), not "sentinel"',
        ),
        (
            ["--set", "notifications.config=x", "--set", "notifications.existingSecret=y"],
            "notifications: set config or existingSecret, not both",
        ),
    ],
    ids=[
        "mode",
        "typo",
        "library",
        "ingress-namespace",
        "provider-name",
        "namespace",
        "notifications",
    ],
)
def test_helm_refuses_bad_values_saying_why(args: list[str], message: str, tmp_path: Path) -> None:
    namespace = [] if "--namespace" in args else ["--namespace", "rollout-sentinel"]
    result = Helm(tmp_path).run("template", "rs", str(CHART), *namespace, *args, check=False)
    assert result.returncode != 0
    assert message in result.stderr
    assert result.stdout == ""
