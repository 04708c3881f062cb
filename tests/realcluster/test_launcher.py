"""``python -m realcluster`` runs the real control plane and leaves nothing behind.

Drives the binaries built by ``make realcluster`` through ``testkit.realcluster.RealCluster``
with the real kubectl and the official ``kubernetes`` client: the server version, the
project's CRD and its validation, a Deployment's ReplicaSet made by the controller manager,
the simulated node (Ready, schedulable, a loopback pod CIDR) and a Deployment whose pods run on
it, TokenRequest, RBAC, ValidatingAdmissionPolicy, ``--no-controllers``; then stopping
(SIGTERM) and killing (SIGKILL) the launcher with two nodes, after which no component process
and no port may remain; and ``realcluster/build.sh``'s no-op and missing-Go answers.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes.client
import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from realcluster.binaries import pinned_versions
from testkit.pod_server import kwok_pod_spec
from testkit.realcluster import RealCluster
from testkit.waiting import wait_until

# Starts real control planes of its own (docs/testkit.md#tiers).
pytestmark = pytest.mark.realcluster

REPO_ROOT = Path(__file__).resolve().parents[2]
CRD_PATH = REPO_ROOT / "crds" / "rolloutanalysis.yaml"
COMPONENTS = {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"}
VERSION = pinned_versions().kubernetes


# -- processes and ports, read from /proc -------------------------------------------------------


def _running(pid: int) -> bool:
    """Whether any thread of ``pid`` is still alive (not exited or a zombie).

    A Go process whose main thread has exited shows as a zombie while its other threads are
    still tearing down and holding its sockets, so every thread counts.
    """
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return False
    for task in tasks:
        try:
            state = (task / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X"):
            return True
    return False


def _children(parent: int) -> dict[int, str]:
    """Direct children of ``parent``: pid -> executable name."""
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            comm_end = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(comm_end[1]) == parent:
                found[int(entry.name)] = Path(os.readlink(entry / "exe")).name
        except (OSError, IndexError, ValueError):
            continue
    return found


def _listening() -> dict[int, int]:
    """Every TCP socket in LISTEN state on this machine: inode -> port."""
    sockets: dict[int, int] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":
                sockets[int(fields[9])] = int(fields[1].rsplit(":", 1)[1], 16)
    return sockets


def _ports_of(pids: list[int]) -> set[int]:
    """The ports these processes listen on."""
    listening = _listening()
    ports: set[int] = set()
    for pid in pids:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inode = int(target[len("socket:[") : -1])
                if inode in listening:
                    ports.add(listening[inode])
    return ports


def _components(cluster: RealCluster) -> tuple[dict[int, str], set[int]]:
    """The launcher's component processes and every port they listen on."""
    assert cluster.pid is not None
    children = _children(cluster.pid)
    return children, _ports_of(list(children))


def _assert_all_gone(pids: list[int], ports: set[int]) -> None:
    wait_until(lambda: not any(_running(pid) for pid in pids), timeout=15, what="children exit")
    # The kernel closes a dead process's sockets as its last thread goes: allow it a moment.
    wait_until(
        lambda: not ports & set(_listening().values()),
        timeout=5,
        what=f"ports {sorted(ports)} to close",
    )


# -- fixtures -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealCluster]:
    """One real control plane (controllers on) shared by the behaviour tests of this module."""
    real = RealCluster(tmp_path_factory.mktemp("realcluster"))
    started = time.monotonic()
    real.start()
    sys.stderr.write(f"realcluster ready in {time.monotonic() - started:.1f} s\n")
    try:
        real.kubectl("apply", "-f", str(CRD_PATH))
        real.kubectl(
            "wait", "--for=condition=Established", "crd/rolloutanalyses.sentinel.example.com"
        )
        yield real
    finally:
        real.stop()


@pytest.fixture(scope="module")
def admin(cluster: RealCluster) -> Iterator[kubernetes.client.ApiClient]:
    """An admin client for the module's cluster."""
    client = cluster.api_client()
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def ns(cluster: RealCluster) -> str:
    """A fresh namespace (left for the cluster's end: the namespace controller is slow to empty)."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    cluster.kubectl("create", "namespace", name)
    return name


def _deployment(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
            },
        },
    }


# -- behaviour ----------------------------------------------------------------------------------


def test_kubectl_version_shows_pinned_server_version(cluster: RealCluster) -> None:
    versions = json.loads(cluster.kubectl("version", "-o", "json").stdout)
    assert versions["serverVersion"]["gitVersion"] == VERSION
    assert versions["serverVersion"]["minor"] == VERSION.split(".")[1]


def test_admin_kubeconfig_works_with_kubectl_and_python_client(
    cluster: RealCluster, admin: kubernetes.client.ApiClient
) -> None:
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    assert config["clusters"][0]["cluster"]["server"] == f"https://127.0.0.1:{cluster.port}"
    assert cluster.kubectl("auth", "can-i", "*", "*").stdout.strip() == "yes"
    names = {n.metadata.name for n in kubernetes.client.CoreV1Api(admin).list_namespace().items}
    assert {"default", "kube-system", "kube-public"} <= names
    # The official client loads the kubeconfig file itself, as the operator does.
    from_file = kubernetes.config.new_client_from_config(config_file=str(cluster.kubeconfig))
    try:
        assert kubernetes.client.VersionApi(from_file).get_code().git_version == VERSION
    finally:
        from_file.close()


def test_deployment_gets_replicaset_from_controller_manager(cluster: RealCluster, ns: str) -> None:
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=yaml.safe_dump(_deployment("web")))

    def replicasets() -> list[dict[str, Any]]:
        listed = json.loads(cluster.kubectl("get", "rs", "-n", ns, "-o", "json").stdout)
        return list(listed["items"])

    items = wait_until(replicasets, timeout=30, what="the Deployment's ReplicaSet")
    assert len(items) == 1
    owner = items[0]["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("Deployment", "web", True)
    assert items[0]["spec"]["replicas"] == 2
    # No kubelet: the ReplicaSet controller creates the pods, nothing runs them.
    pods = wait_until(
        lambda: json.loads(cluster.kubectl("get", "pods", "-n", ns, "-o", "json").stdout)["items"],
        timeout=30,
        what="pods",
    )
    assert {pod["status"]["phase"] for pod in pods} == {"Pending"}


def _nodes(cluster: RealCluster) -> list[dict[str, Any]]:
    return list(json.loads(cluster.kubectl("get", "nodes", "-o", "json").stdout)["items"])


def test_the_simulated_node_is_ready_with_a_loopback_pod_cidr(cluster: RealCluster) -> None:
    (node,) = _nodes(cluster)
    assert node["metadata"]["name"] == "kwok-node-0"
    ready = {c["type"]: c["status"] for c in node["status"]["conditions"]}
    assert ready["Ready"] == "True"
    # Only kwok's own taint is left: the launcher took node.kubernetes.io/not-ready off.
    assert [t["key"] for t in node["spec"]["taints"]] == ["kwok.x-k8s.io/node"]
    cidr = ipaddress.IPv4Network(node["spec"]["podCIDR"])
    assert cidr.prefixlen == 24 and cidr.subnet_of(ipaddress.IPv4Network("127.0.0.0/8"))


def test_pods_that_tolerate_the_node_run_with_ips_from_its_cidr(
    cluster: RealCluster, ns: str
) -> None:
    deployment = _deployment("runs")
    deployment["spec"]["replicas"] = 3
    template = deployment["spec"]["template"]
    template["spec"] = kwok_pod_spec(template["spec"], 8080)
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=yaml.safe_dump(deployment))
    # kubectl's own wait: the rollout completes because the pods become Ready.
    cluster.kubectl("rollout", "status", "-n", ns, "deployment/runs", "--timeout=60s")
    pods = json.loads(cluster.kubectl("get", "pods", "-n", ns, "-o", "json").stdout)["items"]
    assert len(pods) == 3
    (node,) = _nodes(cluster)
    cidr = ipaddress.IPv4Network(node["spec"]["podCIDR"])
    ips = {pod["status"]["podIP"] for pod in pods}
    assert len(ips) == 3 and all(ipaddress.IPv4Address(ip) in cidr for ip in ips)
    assert {pod["status"]["phase"] for pod in pods} == {"Running"}
    assert {pod["spec"]["nodeName"] for pod in pods} == {"kwok-node-0"}
    # Deleting needs kwok too (its pod-delete stage): the ReplicaSet replaces the pod.
    first = pods[0]["metadata"]["name"]
    cluster.kubectl("delete", "pod", "-n", ns, first, "--timeout=30s")
    wait_until(
        lambda: len(names := _running_pod_names(cluster, ns)) == 3 and first not in names,
        timeout=30,
        what="a replacement pod",
    )


def _running_pod_names(cluster: RealCluster, ns: str) -> set[str]:
    pods = json.loads(cluster.kubectl("get", "pods", "-n", ns, "-o", "json").stdout)["items"]
    return {pod["metadata"]["name"] for pod in pods if pod["status"].get("phase") == "Running"}


def test_create_token_for_service_account_authenticates_with_rbac(
    cluster: RealCluster, ns: str
) -> None:
    cluster.kubectl("create", "serviceaccount", "robot", "-n", ns)
    token = cluster.kubectl("create", "token", "robot", "-n", ns).stdout.strip()
    assert token.count(".") == 2  # a signed JWT
    whoami = json.loads(cluster.kubectl("auth", "whoami", "-o", "json", token=token).stdout)
    assert whoami["status"]["userInfo"]["username"] == f"system:serviceaccount:{ns}:robot"
    # RBAC: nothing bound yet, so listing secrets is forbidden; a RoleBinding allows it.
    denied = cluster.kubectl("get", "secrets", "-n", ns, token=token, check=False)
    assert denied.returncode != 0 and "Forbidden" in denied.stderr
    cluster.kubectl("create", "role", "reader", "-n", ns, "--verb=list", "--resource=secrets")
    cluster.kubectl(
        "create", "rolebinding", "reader", "-n", ns, "--role=reader", f"--serviceaccount={ns}:robot"
    )
    wait_until(
        lambda: (
            cluster.kubectl("get", "secrets", "-n", ns, token=token, check=False).returncode == 0
        ),
        timeout=10,
        what="the RoleBinding to take effect",
    )


def test_invalid_rolloutanalysis_is_refused_with_422(
    cluster: RealCluster, admin: kubernetes.client.ApiClient, ns: str
) -> None:
    custom = kubernetes.client.CustomObjectsApi(admin)
    body = {
        "apiVersion": "sentinel.example.com/v1alpha1",
        "kind": "RolloutAnalysis",
        "metadata": {"name": "bad"},
        "spec": {"target": {"name": "web"}, "metrics": [], "failureLimit": 0},
    }
    with pytest.raises(ApiException) as caught:
        custom.create_namespaced_custom_object(
            "sentinel.example.com", "v1alpha1", ns, "rolloutanalyses", body
        )
    assert caught.value.status == 422
    status = json.loads(caught.value.body)
    assert status["reason"] == "Invalid"
    fields = {cause["field"] for cause in status["details"]["causes"]}
    assert {"spec.metrics", "spec.failureLimit"} <= fields
    # kubectl apply shows the same refusal.
    refused = cluster.kubectl("apply", "-n", ns, "-f", "-", input=yaml.safe_dump(body), check=False)
    assert refused.returncode != 0 and "Invalid value" in refused.stderr


def test_validating_admission_policy_is_enforced(cluster: RealCluster, ns: str) -> None:
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": f"no-forbidden-{ns}"},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["configmaps"],
                    }
                ]
            },
            "validations": [{"expression": "!has(object.data) || !('forbidden' in object.data)"}],
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": f"no-forbidden-{ns}"},
        "spec": {
            "policyName": f"no-forbidden-{ns}",
            "validationActions": ["Deny"],
            "matchResources": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}
            },
        },
    }
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([policy, binding]))

    def refused() -> bool:
        attempt = cluster.kubectl(
            "create", "configmap", "c", "-n", ns, "--from-literal=forbidden=1", check=False
        )
        return attempt.returncode != 0 and "ValidatingAdmissionPolicy" in attempt.stderr

    # The policy is compiled asynchronously; until then creation is allowed.
    wait_until(refused, timeout=20, interval=0.5, what="the policy to deny")
    cluster.kubectl("delete", "configmap", "c", "-n", ns, "--ignore-not-found")
    cluster.kubectl("create", "configmap", "ok", "-n", ns, "--from-literal=fine=1")
    cluster.kubectl("delete", "-f", "-", input=yaml.safe_dump_all([binding, policy]))


# -- lifecycle ----------------------------------------------------------------------------------


def test_stop_leaves_no_process_or_port_and_data_dir_survives_restart(tmp_path: Path) -> None:
    real = RealCluster(tmp_path / "work", data_dir=tmp_path / "data")
    real.start()
    try:
        children, ports = _components(real)
        assert set(children.values()) == COMPONENTS
        assert real.port in ports and len(ports) >= 3  # apiserver + etcd client and peer
        real.kubectl("create", "configmap", "kept", "--from-literal=k=v")
        real.stop()
        _assert_all_gone(list(children), ports)

        real.restart()
        kept = json.loads(real.kubectl("get", "configmap", "kept", "-o", "json").stdout)
        assert kept["data"] == {"k": "v"}
        children, ports = _components(real)
    finally:
        real.stop()
    _assert_all_gone(list(children), ports)


def test_sigkilled_launcher_leaves_no_process_or_port(tmp_path: Path) -> None:
    real = RealCluster(tmp_path, nodes=2)
    started = time.monotonic()
    real.start()
    sys.stderr.write(f"realcluster with 2 nodes ready in {time.monotonic() - started:.1f} s\n")
    assert len(_nodes(real)) == 2
    children, ports = _components(real)
    assert set(children.values()) == COMPONENTS
    assert real.pid is not None
    launcher = real.pid
    os.kill(launcher, signal.SIGKILL)
    real.stop()  # reaps the killed launcher
    assert not _running(launcher)
    _assert_all_gone(list(children), ports)


def test_no_controllers_runs_only_etcd_and_apiserver(tmp_path: Path) -> None:
    with RealCluster(tmp_path, controllers=False) as real:
        children, _ = _components(real)
        assert set(children.values()) == {"etcd", "kube-apiserver"}
        assert _nodes(real) == []
        real.kubectl("apply", "-f", "-", input=yaml.safe_dump(_deployment("idle")))
        # With the controller manager a ReplicaSet appears within a second (test above).
        time.sleep(3)
        listed = json.loads(real.kubectl("get", "rs", "-o", "json").stdout)
        assert listed["items"] == []


def test_controller_qps_reaches_the_controller_manager(tmp_path: Path) -> None:
    # bench.operator_throughput --cluster real raises it to create 5,000 Deployments in minutes.
    with RealCluster(tmp_path, nodes=0, controller_qps=150) as real:
        children, _ = _components(real)
        manager = next(pid for pid, name in children.items() if name == "kube-controller-manager")
        argv = Path(f"/proc/{manager}/cmdline").read_bytes().decode().split("\0")
        assert "--kube-api-qps=150" in argv
        assert "--kube-api-burst=300" in argv


def test_controller_qps_must_be_positive(tmp_path: Path) -> None:
    kubeconfig = str(tmp_path / "kc")
    result = _launcher("--port", "0", "--kubeconfig", kubeconfig, "--controller-qps", "0")
    assert result.returncode == 2
    assert result.stderr == "realcluster: --controller-qps must be positive\n"


def _launcher(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "realcluster", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
        env=env,
    )


def test_busy_port_is_one_line_and_exit_2(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        result = _launcher("--port", str(port), "--kubeconfig", str(tmp_path / "kc"))
    assert result.returncode == 2
    assert result.stderr == f"realcluster: port {port} is already in use\n"
    assert not (tmp_path / "kc").exists()


def test_nodes_without_controllers_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = _launcher(
        "--port", "0", "--kubeconfig", str(tmp_path / "kc"), "--no-controllers", "--nodes", "2"
    )
    assert result.returncode == 2
    assert result.stderr == ("realcluster: --nodes needs the controllers: drop --no-controllers\n")


def test_missing_binaries_say_make_realcluster(tmp_path: Path) -> None:
    env = dict(os.environ, REALCLUSTER_CACHE=str(tmp_path / "empty-cache"))
    result = _launcher("--port", "0", "--kubeconfig", str(tmp_path / "kc"), env=env)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("realcluster: ")
    assert "make realcluster" in result.stderr
    assert "Traceback" not in result.stderr


# -- make realcluster ---------------------------------------------------------------------------

BUILD_SCRIPT = REPO_ROOT / "realcluster" / "build.sh"
# What build.sh runs besides go: a PATH made of only these shows the message for a missing Go.
BUILD_TOOLS = ("bash", "awk", "cat", "sha256sum", "cut", "sort", "head", "dirname", "mkdir")


def test_build_is_a_no_op_once_built() -> None:
    started = time.monotonic()
    result = subprocess.run(
        ["bash", str(BUILD_SCRIPT)], capture_output=True, text=True, timeout=60, check=True
    )
    assert time.monotonic() - started < 5
    assert "up to date" in result.stdout
    assert f"Kubernetes {VERSION}" in result.stdout


def test_build_without_go_names_the_go_it_needs_in_one_line(tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    for tool in BUILD_TOOLS:
        found = shutil.which(tool)
        assert found is not None, tool
        (tools / tool).symlink_to(found)
    env = {"HOME": str(tmp_path), "PATH": str(tools), "REALCLUSTER_CACHE": str(tmp_path / "c")}
    result = subprocess.run(
        ["bash", str(BUILD_SCRIPT)], capture_output=True, text=True, timeout=60, env=env
    )
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("realcluster: needs Go >= 1.")
    assert f"to build Kubernetes {VERSION}" in result.stderr
