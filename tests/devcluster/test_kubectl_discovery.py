"""Discovery as kubectl sees it: `api-resources`, `api-versions`, categories (`get all`),
server-side tables of built-in kinds, and `kubectl wait` on a status field.
"""

from __future__ import annotations

import subprocess

import kubernetes.client

from testkit.devcluster import DevCluster
from testkit.manifests import GROUP, PLURAL, VERSION, deployment_manifest, ra_manifest, to_yaml


def test_api_resources_lists_the_crd(cluster: DevCluster) -> None:
    out = cluster.kubectl("api-resources", "--api-group", GROUP).stdout

    lines = [line.split() for line in out.splitlines()]
    assert lines[0] == ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    # The analysis and its two template kinds (docs/templates.md), as kubectl sorts them.
    assert lines[1:] == [
        [
            "clusterrolloutanalysistemplates",
            "cratmpl",
            f"{GROUP}/{VERSION}",
            "false",
            "ClusterRolloutAnalysisTemplate",
        ],
        [PLURAL, "ra", f"{GROUP}/{VERSION}", "true", "RolloutAnalysis"],
        [
            "rolloutanalysistemplates",
            "ratmpl",
            f"{GROUP}/{VERSION}",
            "true",
            "RolloutAnalysisTemplate",
        ],
    ]


def test_api_resources_lists_built_in_kinds(cluster: DevCluster) -> None:
    out = cluster.kubectl("api-resources", "-o", "name").stdout.split()

    for name in (
        "namespaces",
        "configmaps",
        "secrets",
        "serviceaccounts",
        "events",
        "deployments.apps",
        "leases.coordination.k8s.io",
        "events.events.k8s.io",
        "roles.rbac.authorization.k8s.io",
        "rolebindings.rbac.authorization.k8s.io",
        "clusterroles.rbac.authorization.k8s.io",
        "clusterrolebindings.rbac.authorization.k8s.io",
        "customresourcedefinitions.apiextensions.k8s.io",
        f"{PLURAL}.{GROUP}",
    ):
        assert name in out


def test_api_versions_include_the_crd_group(cluster: DevCluster) -> None:
    versions = cluster.kubectl("api-versions").stdout.split()

    assert f"{GROUP}/{VERSION}" in versions
    assert "apps/v1" in versions
    assert "v1" in versions


def test_get_all_includes_the_all_category(cluster: DevCluster, ns: str) -> None:
    cluster.kubectl(
        "apply",
        "-n",
        ns,
        "-f",
        "-",
        input=to_yaml(deployment_manifest("web"), ra_manifest("checkout")),
    )

    out = cluster.kubectl("get", "all", "-n", ns, "-o", "name").stdout.split()

    assert "deployment.apps/web" in out
    assert "rolloutanalysis.sentinel.example.com/checkout" in out


def test_get_deployments_table(cluster: DevCluster, ns: str) -> None:
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=to_yaml(deployment_manifest("web")))

    lines = cluster.kubectl("get", "deployments", "-n", ns).stdout.splitlines()

    assert lines[0].split() == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    name, ready = lines[1].split()[:2]
    assert name == "web"
    assert ready.endswith("/1")


def test_get_configmaps_table(cluster: DevCluster, ns: str) -> None:
    cluster.kubectl(
        "create", "configmap", "cfg", "-n", ns, "--from-literal=a=1", "--from-literal=b=2"
    )

    lines = cluster.kubectl("get", "configmaps", "cfg", "-n", ns).stdout.splitlines()

    assert lines[0].split() == ["NAME", "DATA", "AGE"]
    assert lines[1].split()[:2] == ["cfg", "2"]


def _finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    try:
        stdout, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return process.returncode, stdout, stderr


def test_wait_for_status_field(
    cluster: DevCluster, ns: str, custom: kubernetes.client.CustomObjectsApi
) -> None:
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=to_yaml(ra_manifest("checkout")))
    waiter = cluster.kubectl_popen(
        "wait",
        "ra/checkout",
        "-n",
        ns,
        "--for=jsonpath={.status.lastVerdict}=Fail",
        "--timeout=20s",
    )
    custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, ns, PLURAL, "checkout", {"status": {"lastVerdict": "Fail"}}
    )

    code, stdout, stderr = _finish(waiter)

    assert code == 0, stderr
    assert stdout == "rolloutanalysis.sentinel.example.com/checkout condition met\n"


def test_wait_for_delete_until_finalizer_removed(
    cluster: DevCluster, ns: str, custom: kubernetes.client.CustomObjectsApi
) -> None:
    manifest = ra_manifest("checkout")
    manifest["metadata"]["finalizers"] = ["sentinel.example.com/hold"]
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=to_yaml(manifest))
    deleted = cluster.kubectl("delete", "ra", "checkout", "-n", ns, "--wait=false")
    # -v=6 logs each request, so the test removes the finalizer once kubectl is watching.
    waiter = cluster.kubectl_popen(
        "wait", "ra/checkout", "-n", ns, "--for=delete", "--timeout=20s", "-v=6"
    )
    assert waiter.stderr is not None
    log = []
    for line in waiter.stderr:
        log.append(line)
        if "watch=true" in line:
            break
    assert waiter.poll() is None, "".join(log)
    custom.patch_namespaced_custom_object(
        GROUP, VERSION, ns, PLURAL, "checkout", {"metadata": {"finalizers": []}}
    )

    code, stdout, stderr = _finish(waiter)

    assert (
        deleted.stdout
        == f'rolloutanalysis.sentinel.example.com "checkout" deleted from {ns} namespace\n'
    )
    assert code == 0, stderr
    assert stdout == "rolloutanalysis.sentinel.example.com/checkout condition met\n"
