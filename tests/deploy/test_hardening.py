"""Pods, network and the guard rail objects: what every rendered overlay promises, and a real
kube-apiserver (realcluster, with PodSecurity and ValidatingAdmissionPolicy) accepting it all.
The promises are those of docs/operations.md#pods-and-the-network.

devcluster does not serve NetworkPolicies or admission policies (``NOT_ON_DEVCLUSTER``), so
those are applied here, to realcluster: each overlay with ``--dry-run=server`` and then for
real, into a namespace labelled ``pod-security.kubernetes.io/enforce: restricted`` — the API
server warns about any Deployment whose Pods the restricted standard would refuse, and such a
warning fails the test (a sabotaged copy shows the warning is really produced).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest

from testkit.manifests import to_yaml
from testkit.realcluster import RealCluster
from tests.deploy.kustomize import HOME, OPERATOR_ACCOUNT, OVERLAYS, WEB_ACCOUNT, render

TEAMS = ("team-a", "team-b")  # the namespaces the `namespaced` overlay binds Roles in
WEB_PORT = 8000
INGRESS = "ingress-nginx"  # the namespace the web port admits by default
METRICS_PORT = 9100
# Egress (protocol, port): DNS, the API server (Service port and endpoint port), Prometheus.
BASE_EGRESS = {("UDP", 53), ("TCP", 53), ("TCP", 443), ("TCP", 6443), ("TCP", 9090)}
HA_EGRESS = {("TCP", 5432), ("TCP", 6379)}  # PostgreSQL and Redis


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealCluster]:
    """The real control plane (no controller manager: nothing here needs ReplicaSets)."""
    with RealCluster(tmp_path_factory.mktemp("hardening-realcluster"), controllers=False) as c:
        # A server-side dry run stores nothing, so the namespaces the objects live in must exist.
        for name in (HOME, *TEAMS):
            c.kubectl("create", "namespace", name)
        yield c


def _deployments(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found = [o for o in objects if o["kind"] == "Deployment"]
    assert found
    return found


def _containers(deployment: dict[str, Any]) -> list[dict[str, Any]]:
    pod = deployment["spec"]["template"]["spec"]
    return [*pod["containers"], *pod.get("initContainers", [])]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_overlay_applies_to_the_real_api_server_restricted_and_all(
    real: RealCluster, overlay: str
) -> None:
    objects = render(real, f"overlays/{overlay}")
    kinds = {o["kind"] for o in objects}
    assert {"NetworkPolicy", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} <= (
        kinds
    )
    manifest = to_yaml(*objects)
    dry = real.kubectl("apply", "--dry-run=server", "-f", "-", input=manifest, check=False)
    assert dry.returncode == 0, dry.stderr
    lines = dry.stdout.strip().splitlines()
    assert len(lines) == len(objects)
    assert all(line.endswith("(server dry run)") for line in lines), lines

    applied = real.kubectl("apply", "-f", "-", input=manifest, check=False)
    assert applied.returncode == 0, applied.stderr
    # The namespace is restricted (applied first) and no Pod template breaks the standard.
    assert "PodSecurity" not in applied.stderr, applied.stderr
    namespace = json.loads(real.kubectl("get", "namespace", HOME, "-o", "json").stdout)
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    stored = real.kubectl("get", "networkpolicies", "-n", HOME, "-o", "name").stdout.split()
    expected = {
        f"networkpolicy.networking.k8s.io/{o['metadata']['name']}"
        for o in objects
        if o["kind"] == "NetworkPolicy"
    }
    assert len(expected) >= 4 and set(stored) >= expected
    policies = real.kubectl("get", "validatingadmissionpolicies", "-o", "name").stdout
    assert "rollout-sentinel-deployment-guard" in policies


def test_a_pod_breaking_the_restricted_standard_is_reported(real: RealCluster) -> None:
    """The check above can fail: a web Deployment without seccomp and with root is warned."""
    objects = render(real, "overlays/ha")
    real.kubectl(
        "apply", "-f", "-", input=to_yaml(*[o for o in objects if o["kind"] == "Namespace"])
    )
    web = copy.deepcopy(
        next(o for o in _deployments(objects) if o["metadata"]["name"] == WEB_ACCOUNT)
    )
    web["metadata"]["name"] = "sabotaged-web"
    pod = web["spec"]["template"]["spec"]
    del pod["securityContext"]["seccompProfile"]
    for container in _containers(web):
        del container["securityContext"]["seccompProfile"]
    result = real.kubectl("apply", "--dry-run=server", "-f", "-", input=to_yaml(web))
    assert "would violate PodSecurity" in result.stderr and "seccompProfile" in result.stderr


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_pod_is_hardened(real: RealCluster, overlay: str) -> None:
    objects = render(real, f"overlays/{overlay}")
    for deployment in _deployments(objects):
        pod = deployment["spec"]["template"]["spec"]
        context = pod["securityContext"]
        assert context["runAsNonRoot"] is True
        assert context["runAsUser"] > 0 and context["runAsGroup"] > 0
        assert context["seccompProfile"] == {"type": "RuntimeDefault"}
        volumes = {v["name"]: v for v in pod["volumes"]}
        assert volumes["tmp"] == {"name": "tmp", "emptyDir": {}}
        for container in _containers(deployment):
            security = container["securityContext"]
            assert security["allowPrivilegeEscalation"] is False
            assert security["readOnlyRootFilesystem"] is True
            assert security["capabilities"] == {"drop": ["ALL"]}
            assert security["seccompProfile"] == {"type": "RuntimeDefault"}
            # Read-only root: every writable path is a mounted volume.
            mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
            assert mounts["/tmp"] == "tmp"
            if overlay != "ha":
                assert mounts["/data"] == "data"  # the SQLite file
                assert "persistentVolumeClaim" in volumes["data"]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_two_accounts_never_share_a_pod(real: RealCluster, overlay: str) -> None:
    objects = render(real, f"overlays/{overlay}")
    accounts = {}
    for deployment in _deployments(objects):
        pod = deployment["spec"]["template"]["spec"]
        names = {c["name"] for c in pod["containers"]}
        accounts[frozenset(names)] = pod["serviceAccountName"]
    assert accounts == {frozenset({"web"}): WEB_ACCOUNT, frozenset({"operator"}): OPERATOR_ACCOUNT}
    service_accounts = {o["metadata"]["name"] for o in objects if o["kind"] == "ServiceAccount"}
    assert service_accounts == {WEB_ACCOUNT, OPERATOR_ACCOUNT}


def _ports(rules: list[dict[str, Any]]) -> set[tuple[str, int]]:
    return {(p["protocol"], p["port"]) for rule in rules for p in rule.get("ports", [])}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_network_policies_let_in_two_ports_and_out_only_what_is_needed(
    real: RealCluster, overlay: str
) -> None:
    objects = render(real, f"overlays/{overlay}")
    policies = [o for o in objects if o["kind"] == "NetworkPolicy"]
    for policy in policies:
        assert policy["metadata"]["namespace"] == HOME
    deny = [p for p in policies if not p["spec"].get("ingress") and not p["spec"].get("egress")]
    # A default deny of both directions for every Pod of the namespace.
    assert [p["spec"] for p in deny] == [{"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}]
    ingress = {
        json.dumps(p["spec"]["podSelector"], sort_keys=True): _ports(p["spec"]["ingress"])
        for p in policies
        if p["spec"].get("ingress")
    }
    assert ingress == {
        json.dumps({"matchLabels": {"app.kubernetes.io/component": "web"}}): {("TCP", WEB_PORT)},
        json.dumps({"matchLabels": {"app.kubernetes.io/component": "operator"}}): {
            ("TCP", METRICS_PORT)
        },
    }
    # The web port admits only the ingress controller's namespace (the chart's webIngress).
    (web,) = [p for p in policies if p["metadata"]["name"] == "rollout-sentinel-web-ingress"]
    assert web["spec"]["ingress"] == [
        {
            "from": [
                {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": INGRESS}}}
            ],
            "ports": [{"protocol": "TCP", "port": WEB_PORT}],
        }
    ]
    # No ingress rule of any policy admits every source.
    for policy in policies:
        assert all(rule.get("from") for rule in policy["spec"].get("ingress", []))
    egress = set()
    for policy in policies:
        egress |= _ports(policy["spec"].get("egress", []))
        # No rule without ports: that would be "anything, anywhere".
        assert all(rule.get("ports") for rule in policy["spec"].get("egress", []))
    assert egress == (BASE_EGRESS | HA_EGRESS if overlay == "ha" else BASE_EGRESS)
    # Every port the Pods listen on is one the policies let in.
    for deployment in _deployments(objects):
        for container in deployment["spec"]["template"]["spec"]["containers"]:
            for port in container.get("ports", []):
                assert port["containerPort"] in {WEB_PORT, METRICS_PORT}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_settings_are_production_ones(real: RealCluster, overlay: str) -> None:
    objects = render(real, f"overlays/{overlay}")
    config = next(o for o in objects if o["kind"] == "ConfigMap")["data"]
    hosts = config["SENTINEL_ALLOWED_HOSTS"].split(",")
    assert "*" not in config["SENTINEL_ALLOWED_HOSTS"] and hosts
    web = next(o for o in _deployments(objects) if o["metadata"]["name"] == WEB_ACCOUNT)
    # The kubelet's probes send a Host the web app accepts.
    for probe in ("readinessProbe", "livenessProbe"):
        headers = web["spec"]["template"]["spec"]["containers"][0][probe]["httpGet"]["httpHeaders"]
        assert headers[0]["name"] == "Host" and headers[0]["value"] in hosts
    operator = next(o for o in _deployments(objects) if o["metadata"]["name"] == OPERATOR_ACCOUNT)
    env = {e["name"]: e for e in operator["spec"]["template"]["spec"]["containers"][0]["env"]}
    # Listening on every interface only behind the metrics NetworkPolicy (checked above).
    assert env["SENTINEL_METRICS_ADDR"]["value"] == f"0.0.0.0:{METRICS_PORT}"


def test_ha_redis_password_comes_from_a_secret(real: RealCluster) -> None:
    objects = render(real, "overlays/ha")
    config = next(o for o in objects if o["kind"] == "ConfigMap")["data"]
    assert "SENTINEL_BROKER_URL" not in config
    assert not [o for o in objects if o["kind"] == "Secret"]  # the administrator creates it
    deployments = {d["metadata"]["name"]: d for d in _deployments(objects)}
    container = deployments[OPERATOR_ACCOUNT]["spec"]["template"]["spec"]["containers"][0]
    names = [e["name"] for e in container["env"]]
    env = {e["name"]: e for e in container["env"]}
    assert env["REDIS_PASSWORD"]["valueFrom"] == {
        "secretKeyRef": {"name": "rollout-sentinel-redis", "key": "password"}
    }
    # The kubelet expands $(REDIS_PASSWORD) only from a variable defined before it.
    assert names.index("REDIS_PASSWORD") < names.index("SENTINEL_BROKER_URL")
    url = env["SENTINEL_BROKER_URL"]["value"]
    assert url.startswith("redis://:$(REDIS_PASSWORD)@redis.rollout-sentinel.svc:6379/")
    # The web app queues no task: no broker, no Redis password, no way out to Redis.
    web = deployments[WEB_ACCOUNT]["spec"]["template"]["spec"]
    for container in [*web["containers"], *web.get("initContainers", [])]:
        assert not {e["name"] for e in container.get("env", [])} & {
            "REDIS_PASSWORD",
            "SENTINEL_BROKER_URL",
        }
        assert all(
            s["secretRef"]["name"] == "rollout-sentinel"
            for s in container["envFrom"]
            if "secretRef" in s
        )
    for policy in (o for o in objects if o["kind"] == "NetworkPolicy"):
        for rule in policy["spec"].get("egress", []):
            if ("TCP", 6379) in _ports([rule]):
                assert policy["spec"]["podSelector"] == {
                    "matchLabels": {"app.kubernetes.io/component": "operator"}
                }


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_only_the_operator_reads_the_task_key_secret(real: RealCluster, overlay: str) -> None:
    objects = render(real, f"overlays/{overlay}")
    readers = {
        d["metadata"]["name"]
        for d in _deployments(objects)
        for c in _containers(d)
        for s in c.get("envFrom", [])
        if s.get("secretRef", {}).get("name") == "rollout-sentinel-operator"
    }
    assert readers == {OPERATOR_ACCOUNT}


def test_guard_policy_matches_exactly_the_two_accounts(real: RealCluster) -> None:
    objects = render(real, "overlays/ha")
    policies = [o for o in objects if o["kind"] == "ValidatingAdmissionPolicy"]
    # One guard per target kind (docs/status.md#pausing-each-kind), each bound to Deny.
    guarded = {p["spec"]["matchConstraints"]["resourceRules"][0]["resources"][0] for p in policies}
    assert guarded == {"deployments", "statefulsets", "daemonsets"}
    bindings = {
        o["spec"]["policyName"]: o["spec"]
        for o in objects
        if o["kind"] == "ValidatingAdmissionPolicyBinding"
    }
    for policy in policies:
        condition = policy["spec"]["matchConditions"][0]["expression"]
        for account in (OPERATOR_ACCOUNT, WEB_ACCOUNT):
            assert f"'system:serviceaccount:{HOME}:{account}'" in condition
        assert condition.count("system:serviceaccount:") == 2
        assert policy["spec"]["failurePolicy"] == "Fail"
        assert bindings[policy["metadata"]["name"]]["validationActions"] == ["Deny"]
