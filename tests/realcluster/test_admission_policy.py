"""The admission guard rail of deploy/, enforced by a real kube-apiserver.

docs/operations.md#the-guard-rail-a-validatingadmissionpolicy describes it.

``kubectl apply -k deploy/overlays/ha`` on the real control plane (ValidatingAdmissionPolicy
on) installs the two ServiceAccounts, their RBAC and the ``rollout-sentinel-deployment-guard``
policy with its binding. With a token of each account (``kubectl create token``, so every
request is authorized by exactly deploy/'s RBAC), a Deployment can be paused, resumed and
annotated under ``sentinel.example.com/``, and nothing else: an image, replicas, label or
foreign annotation change is refused by the API server with the policy's message, and the
stored Deployment is unchanged. The cluster admin, sending the same patches, is not affected.
A StatefulSet and a DaemonSet the same way, each with its own guard: the product's own pause and
release pass it, an image, replicas, strategy, label or foreign-annotation change does not. A
DaemonSet's strategy only flips between RollingUpdate and OnDelete with the pause's record:
``maxUnavailable``/``maxSurge`` are never widened, not even on the way back from a pause, and a
DaemonSet a person keeps on OnDelete is not switched to RollingUpdate.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from sentinel_cluster import kube, writes
from sentinel_core.workload_kinds import PauseTarget, Released, TargetState, is_paused
from testkit.clusters import create_token, kubeconfig_for_token, kubectl_apply
from testkit.manifests import (
    analysis_manifest,
    deployment_manifest,
    gauge_metric,
    workload_manifest,
)
from testkit.metrics_app import GaugeSetter, MetricsApp
from testkit.operator import OperatorStarter
from testkit.paths import DEPLOY_DIR
from testkit.prometheus import PrometheusServer
from testkit.realcluster import RealCluster
from testkit.waiting import wait_until

# Starts real control planes of its own (docs/testkit.md#tiers).
pytestmark = pytest.mark.realcluster

HOME = "rollout-sentinel"
POLICY = "rollout-sentinel-deployment-guard"
MESSAGE = (
    "rollout-sentinel accounts may change only spec.paused and sentinel.example.com/* "
    "annotations of a Deployment"
)
OPERATOR = "rollout-sentinel-operator"
WEB = "rollout-sentinel-web"
ACCOUNTS = (OPERATOR, WEB)
IMAGE = "registry.example.com/shop/checkout:1"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealCluster]:
    """The real control plane with deploy/overlays/ha applied; no controller manager needed."""
    with RealCluster(tmp_path_factory.mktemp("admission-realcluster"), controllers=False) as real:
        real.kubectl("apply", "-k", str(DEPLOY_DIR / "overlays" / "ha"))
        real.kubectl("create", "namespace", "shop")
        yield real


@pytest.fixture(scope="module")
def tokens(cluster: RealCluster) -> dict[str, str]:
    return {account: create_token(cluster, account, HOME) for account in ACCOUNTS}


@pytest.fixture(scope="module")
def policy_active(cluster: RealCluster, tokens: dict[str, str]) -> None:
    """Wait until the API server enforces the policy (it loads policies asynchronously).

    A throw-away Deployment is probed with an image change; were the policy never enforced,
    this fails after the timeout instead of letting the tests below pass on a stale cache.
    """
    kubectl_apply(cluster, deployment_manifest("probe", "shop", IMAGE))

    answers: list[str] = []

    def refused() -> bool:
        # A new image every time: once one landed (before the policy was loaded), sending it
        # again would be a no-op, which the policy rightly lets through.
        image = f"probe:{len(answers)}"
        result = _patch(cluster, tokens[ACCOUNTS[0]], "probe", _image_patch(image), "strategic")
        answers.append(result.stderr)
        return result.returncode != 0 and MESSAGE in result.stderr

    try:
        wait_until(refused, timeout=90, interval=0.5, what="the admission policy to be enforced")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the last answers: {answers[-3:]}") from exc


@pytest.fixture
def deployment(cluster: RealCluster, policy_active: None, request: pytest.FixtureRequest) -> str:
    name = f"checkout-{request.node.callspec.id.replace('_', '-').replace('/', '-')}"[:50].lower()
    kubectl_apply(cluster, deployment_manifest(name, "shop", IMAGE, replicas=2))
    return name


def _patch(
    cluster: RealCluster, token: str | None, name: str, patch: dict[str, Any], kind: str = "merge"
) -> Any:
    return cluster.kubectl(
        "patch",
        "deployment",
        name,
        "-n",
        "shop",
        f"--type={kind}",
        "-p",
        json.dumps(patch),
        token=token,
        check=False,
    )


def _image_patch(image: str) -> dict[str, Any]:
    return {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": image}]}}}}


def _get(cluster: RealCluster, name: str) -> dict[str, Any]:
    return dict(
        json.loads(cluster.kubectl("get", "deployment", name, "-n", "shop", "-o", "json").stdout)
    )


def test_the_policy_is_installed_and_type_checks(cluster: RealCluster, policy_active: None) -> None:
    policy = json.loads(
        cluster.kubectl("get", "validatingadmissionpolicy", POLICY, "-o", "json").stdout
    )
    # The API server type-checks CEL against the Deployment schema; a misspelt field shows here.
    assert policy["status"].get("typeChecking", {}).get("expressionWarnings") in (None, [])
    binding = json.loads(
        cluster.kubectl("get", "validatingadmissionpolicybinding", POLICY, "-o", "json").stdout
    )
    assert binding["spec"] == {"policyName": POLICY, "validationActions": ["Deny"]}


@pytest.mark.parametrize("account", ACCOUNTS)
def test_the_accounts_may_pause_resume_and_annotate(
    cluster: RealCluster, tokens: dict[str, str], deployment: str, account: str
) -> None:
    token = tokens[account]
    paused = _patch(
        cluster,
        token,
        deployment,
        {
            "spec": {"paused": True},
            "metadata": {"annotations": {"sentinel.example.com/paused-by": "shop/checkout"}},
        },
    )
    assert paused.returncode == 0, paused.stderr
    stored = _get(cluster, deployment)
    assert stored["spec"]["paused"] is True
    assert stored["metadata"]["annotations"]["sentinel.example.com/paused-by"] == "shop/checkout"
    # Resume: paused off and the annotation removed, as the web app's resume does.
    resumed = _patch(
        cluster,
        token,
        deployment,
        {
            "spec": {"paused": False},
            "metadata": {"annotations": {"sentinel.example.com/paused-by": None}},
        },
    )
    assert resumed.returncode == 0, resumed.stderr
    stored = _get(cluster, deployment)
    assert stored["spec"].get("paused") in (None, False)
    assert "sentinel.example.com/paused-by" not in stored["metadata"].get("annotations", {})


REFUSED = {
    "image": (_image_patch("registry.example.com/evil:1"), "strategic"),
    "replicas": ({"spec": {"replicas": 9}}, "merge"),
    "labels": ({"metadata": {"labels": {"team": "evil"}}}, "merge"),
    "foreign-annotation": ({"metadata": {"annotations": {"example.com/owner": "evil"}}}, "merge"),
    "paused-with-image": (
        {"spec": {"paused": True, **_image_patch("registry.example.com/evil:1")["spec"]}},
        "strategic",
    ),
    "strategy": ({"spec": {"strategy": {"rollingUpdate": {"maxSurge": 3}}}}, "merge"),
}


@pytest.mark.parametrize("change", sorted(REFUSED))
@pytest.mark.parametrize("account", ACCOUNTS)
def test_any_other_change_is_refused_by_the_policy(
    cluster: RealCluster, tokens: dict[str, str], deployment: str, account: str, change: str
) -> None:
    before = _get(cluster, deployment)
    patch, kind = REFUSED[change]
    result = _patch(cluster, tokens[account], deployment, patch, kind)
    assert result.returncode != 0
    # Refused by admission (the policy's name and message), not by RBAC (which grants patch).
    assert f"ValidatingAdmissionPolicy '{POLICY}'" in result.stderr, result.stderr
    assert MESSAGE in result.stderr
    assert "forbidden: User" not in result.stderr
    after = _get(cluster, deployment)
    assert after["metadata"]["generation"] == before["metadata"]["generation"]
    assert after["spec"] == before["spec"]
    assert after["metadata"].get("labels") == before["metadata"].get("labels")
    assert after["metadata"].get("annotations") == before["metadata"].get("annotations")


@pytest.mark.parametrize("change", sorted(REFUSED))
def test_a_cluster_admin_is_not_affected(
    cluster: RealCluster, deployment: str, change: str
) -> None:
    before = _get(cluster, deployment)
    patch, kind = REFUSED[change]
    result = _patch(cluster, None, deployment, patch, kind)
    assert result.returncode == 0, result.stderr
    after = _get(cluster, deployment)
    # The change landed: the spec, the labels or the annotations differ from before.
    assert _editable(after) != _editable(before)


def _editable(deployment: dict[str, Any]) -> tuple[Any, ...]:
    metadata = deployment["metadata"]
    return deployment["spec"], metadata.get("labels"), metadata.get("annotations")


def test_the_real_pause_and_resume_pass_the_guard_rail(
    cluster: RealCluster,
    tokens: dict[str, str],
    policy_active: None,
    migrated_database: Path,
    prometheus: PrometheusServer,
    metrics_app: MetricsApp,
    case: str,
    tmp_path: Path,
) -> None:
    """The policy refuses what the operator must not send, not what it does send."""
    GaugeSetter(metrics_app, prometheus, case)(0.9)
    kubeconfig = kubeconfig_for_token(cluster, tokens[OPERATOR], tmp_path / "operator")
    starter = OperatorStarter(tmp_path, migrated_database, env={"POD_NAMESPACE": HOME})
    try:
        operator = starter(
            kubeconfig=kubeconfig, prometheus_url=prometheus.url, namespaces=["shop"]
        )
        kubectl_apply(cluster, deployment_manifest("guarded", "shop", IMAGE))
        kubectl_apply(
            cluster,
            analysis_manifest(
                "guarded",
                "shop",
                target="guarded",
                metrics=[gauge_metric(case, 0.5)],
                failure_limit=1,
            ),
        )
        wait_until(
            lambda: _get(cluster, "guarded")["spec"].get("paused") is True,
            timeout=30,
            what=f"the operator's pause\n{operator.log}",
        )
        annotations = _get(cluster, "guarded")["metadata"]["annotations"]
        assert annotations["sentinel.example.com/paused-by"] == "shop/guarded"
        assert POLICY not in operator.log and "refused" not in operator.log, operator.log
        operator.stop()
        # The web app's resume writes the Deployment with the product's own code
        # (sentinel_cluster.writes.release, what services.resume_analysis calls) and token.
        as_web = kube.KubeClient(
            kube.load_api_client(str(kubeconfig_for_token(cluster, tokens[WEB], tmp_path / "web")))
        )
        released = writes.release(as_web, "shop", "guarded", "shop/guarded")
        assert released is not None and released.outcome == Released.RESTORED
        resumed = _get(cluster, "guarded")
        assert resumed["spec"].get("paused") in (None, False)
        assert not any(
            key.startswith("sentinel.example.com/paused")
            for key in resumed["metadata"].get("annotations", {})
        )
    finally:
        starter.stop_all()


# -- the other target kinds (docs/status.md#pausing-each-kind) ------------------------------------

KIND_MESSAGES = {
    "StatefulSet": (
        "rollout-sentinel accounts may change only spec.updateStrategy.rollingUpdate.partition "
        "and sentinel.example.com/* annotations of a StatefulSet"
    ),
    "DaemonSet": (
        "rollout-sentinel accounts may change only spec.updateStrategy.type and "
        "sentinel.example.com/* annotations of a DaemonSet"
    ),
}
KIND_POLICIES = {
    "StatefulSet": "rollout-sentinel-statefulset-guard",
    "DaemonSet": "rollout-sentinel-daemonset-guard",
}


@pytest.fixture(scope="module")
def kind_policies_active(cluster: RealCluster, tokens: dict[str, str]) -> None:
    """Wait until the API server enforces the StatefulSet and DaemonSet guards (as above)."""
    for kind in KIND_POLICIES:
        probe = f"probe-{kind.lower()}"
        kubectl_apply(cluster, workload_manifest(kind, probe, "shop", IMAGE))
        answers: list[str] = []

        def refused(kind: str = kind, probe: str = probe, answers: list[str] = answers) -> bool:
            image = f"probe:{len(answers)}"
            result = _patch_kind(cluster, tokens[OPERATOR], kind, probe, _image_patch(image))
            answers.append(result.stderr)
            return result.returncode != 0 and KIND_MESSAGES[kind] in result.stderr

        try:
            wait_until(refused, timeout=90, interval=0.5, what=f"the {kind} guard")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the last answers: {answers[-3:]}") from exc


def _patch_kind(
    cluster: RealCluster,
    token: str | None,
    kind: str,
    name: str,
    patch: dict[str, Any],
    patch_type: str = "strategic",
) -> Any:
    return cluster.kubectl(
        "patch", kind.lower(), name, "-n", "shop", f"--type={patch_type}", "-p", json.dumps(patch),
        token=token, check=False,
    )  # fmt: skip


def _get_kind(cluster: RealCluster, kind: str, name: str) -> dict[str, Any]:
    return dict(
        json.loads(cluster.kubectl("get", kind.lower(), name, "-n", "shop", "-o", "json").stdout)
    )


@pytest.mark.parametrize("kind", sorted(KIND_POLICIES))
@pytest.mark.parametrize("account", ACCOUNTS)
def test_the_accounts_may_hold_and_release_the_other_kinds(
    cluster: RealCluster,
    tokens: dict[str, str],
    kind_policies_active: None,
    kind: str,
    account: str,
    tmp_path: Path,
) -> None:
    """The product's own pause and release (``sentinel_cluster.writes``) pass each guard."""
    name = f"held-{kind.lower()}-{account.rsplit('-', 1)[-1]}"
    kubectl_apply(cluster, workload_manifest(kind, name, "shop", IMAGE, replicas=5))
    before = _get_kind(cluster, kind, name)
    client = kube.KubeClient(
        kube.load_api_client(str(kubeconfig_for_token(cluster, tokens[account], tmp_path / "k")))
    )
    order = PauseTarget(
        "shop", name, ("shop/guard",), datetime.now(UTC), "shop/guard: test", kind=kind
    )
    writes.pause(client, order, before)
    held = _get_kind(cluster, kind, name)
    assert is_paused(kind, held)
    if kind == "StatefulSet":
        # No controller here, so no status: the whole set is held at its replicas.
        assert held["spec"]["updateStrategy"]["rollingUpdate"]["partition"] == 5
    else:
        # Only the type flipped: rollingUpdate is as it was.
        assert held["spec"]["updateStrategy"] == {
            **before["spec"]["updateStrategy"],
            "type": "OnDelete",
        }
    released = writes.release(client, "shop", name, "shop/guard", kind=kind)
    assert released is not None and released.outcome == Released.RESTORED
    after = _get_kind(cluster, kind, name)
    assert after["spec"] == before["spec"]
    # Paused again and resumed by hand: the clean-up of the stale record (annotations only,
    # docs/status.md#pausing-each-kind) passes the guard too.
    writes.pause(client, order, after)
    by_hand = {"spec": {"updateStrategy": before["spec"]["updateStrategy"]}}
    cluster.kubectl(
        "patch", kind.lower(), name, "-n", "shop", "--type=merge", "-p", json.dumps(by_hand)
    )
    stale = _get_kind(cluster, kind, name)
    assert TargetState.from_workload(kind, stale).needs_clean_up
    assert writes.clean_up(client, kind, "shop", name, stale)
    cleaned = _get_kind(cluster, kind, name)
    assert cleaned["spec"] == before["spec"]
    assert not any(
        k.startswith("sentinel.example.com/") for k in after["metadata"].get("annotations", {})
    )


KIND_REFUSED = {
    ("StatefulSet", "image"): (_image_patch("registry.example.com/evil:1"), "strategic"),
    ("StatefulSet", "replicas"): ({"spec": {"replicas": 9}}, "merge"),
    ("StatefulSet", "on-delete"): (
        {"spec": {"updateStrategy": {"type": "OnDelete", "rollingUpdate": None}}},
        "merge",
    ),
    ("StatefulSet", "foreign-annotation"): (
        {"metadata": {"annotations": {"example.com/owner": "evil"}}},
        "merge",
    ),
    ("DaemonSet", "image"): (_image_patch("registry.example.com/evil:1"), "strategic"),
    ("DaemonSet", "min-ready"): ({"spec": {"minReadySeconds": 60}}, "merge"),
    ("DaemonSet", "labels"): ({"metadata": {"labels": {"team": "evil"}}}, "merge"),
}


@pytest.mark.parametrize(
    ("kind", "change"), sorted(KIND_REFUSED), ids=[f"{k}-{c}" for k, c in sorted(KIND_REFUSED)]
)
def test_any_other_change_of_the_other_kinds_is_refused(
    cluster: RealCluster, tokens: dict[str, str], kind_policies_active: None, kind: str, change: str
) -> None:
    name = f"refused-{kind.lower()}-{change}"
    kubectl_apply(cluster, workload_manifest(kind, name, "shop", IMAGE, replicas=2))
    before = _get_kind(cluster, kind, name)
    patch, patch_type = KIND_REFUSED[(kind, change)]
    for account in ACCOUNTS:
        result = _patch_kind(cluster, tokens[account], kind, name, patch, patch_type)
        assert result.returncode != 0
        assert f"ValidatingAdmissionPolicy '{KIND_POLICIES[kind]}'" in result.stderr, result.stderr
        assert KIND_MESSAGES[kind] in result.stderr
    after = _get_kind(cluster, kind, name)
    assert after["metadata"]["generation"] == before["metadata"]["generation"]
    assert after["spec"] == before["spec"]
    assert after["metadata"].get("annotations") == before["metadata"].get("annotations")
    # The cluster admin's identical patch goes through.
    assert _patch_kind(cluster, None, kind, name, patch, patch_type).returncode == 0


# -- a DaemonSet's update strategy: OnDelete and back, never wider -------------------------------

STRATEGY_MESSAGE = (
    "rollout-sentinel accounts may only switch a DaemonSet's spec.updateStrategy.type to "
    "OnDelete with its pause record and back, never change spec.updateStrategy.rollingUpdate"
)
RECORD_MESSAGE = (
    "rollout-sentinel accounts may write a DaemonSet's "
    "sentinel.example.com/update-strategy-before only when switching it to OnDelete"
)
RECORD = "sentinel.example.com/update-strategy-before"
WIDE = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "100%", "maxSurge": 0}}
STRATEGY_REFUSED: dict[str, tuple[dict[str, Any], str]] = {
    # kube-proxy's whole fleet restarted at once.
    "max-unavailable": (
        {"spec": {"updateStrategy": {"rollingUpdate": {"maxUnavailable": "100%"}}}},
        STRATEGY_MESSAGE,
    ),
    "max-surge": (
        {"spec": {"updateStrategy": {"rollingUpdate": {"maxSurge": 3, "maxUnavailable": 0}}}},
        STRATEGY_MESSAGE,
    ),
    "on-delete-without-record": (
        {"spec": {"updateStrategy": {"type": "OnDelete"}}},
        STRATEGY_MESSAGE,
    ),
    "on-delete-widened": (
        {
            "spec": {
                "updateStrategy": {"type": "OnDelete", "rollingUpdate": WIDE["rollingUpdate"]}
            },
            "metadata": {"annotations": {RECORD: json.dumps(WIDE)}},
        },
        STRATEGY_MESSAGE,
    ),
    "record-alone": ({"metadata": {"annotations": {RECORD: json.dumps(WIDE)}}}, RECORD_MESSAGE),
}


def _daemonset(cluster: RealCluster, name: str, strategy: dict[str, Any] | None = None) -> None:
    manifest = workload_manifest("DaemonSet", name, "shop", IMAGE)
    if strategy is not None:
        manifest["spec"]["updateStrategy"] = strategy
    kubectl_apply(cluster, manifest)


def _refused_for_both(
    cluster: RealCluster, tokens: dict[str, str], name: str, patch: dict[str, Any], message: str
) -> None:
    before = _get_kind(cluster, "DaemonSet", name)
    for account in ACCOUNTS:
        result = _patch_kind(cluster, tokens[account], "DaemonSet", name, patch, "merge")
        assert result.returncode != 0, (account, patch)
        assert "ValidatingAdmissionPolicy 'rollout-sentinel-daemonset-guard'" in result.stderr
        assert message in result.stderr, result.stderr
    after = _get_kind(cluster, "DaemonSet", name)
    assert after["spec"] == before["spec"]
    assert after["metadata"].get("annotations") == before["metadata"].get("annotations")


@pytest.mark.parametrize("change", sorted(STRATEGY_REFUSED))
def test_a_daemonsets_strategy_is_never_widened(
    cluster: RealCluster, tokens: dict[str, str], kind_policies_active: None, change: str
) -> None:
    name = f"strategy-{change}"
    _daemonset(cluster, name)
    patch, message = STRATEGY_REFUSED[change]
    _refused_for_both(cluster, tokens, name, patch, message)
    # The cluster admin's identical patch goes through.
    assert _patch_kind(cluster, None, "DaemonSet", name, patch, "merge").returncode == 0


def test_a_held_daemonset_goes_back_only_to_its_own_strategy(
    cluster: RealCluster, tokens: dict[str, str], kind_policies_active: None, tmp_path: Path
) -> None:
    """The release may flip the type back; it may not bring a wider rollingUpdate with it."""
    _daemonset(cluster, "held-agent")
    before = _get_kind(cluster, "DaemonSet", "held-agent")
    client = kube.KubeClient(
        kube.load_api_client(str(kubeconfig_for_token(cluster, tokens[OPERATOR], tmp_path / "k")))
    )
    order = PauseTarget(
        "shop",
        "held-agent",
        ("shop/guard",),
        datetime.now(UTC),
        "shop/guard: test",
        kind="DaemonSet",
    )
    writes.pause(client, order, before)
    assert _get_kind(cluster, "DaemonSet", "held-agent")["spec"]["updateStrategy"]["type"] == (
        "OnDelete"
    )
    widened = {"spec": {"updateStrategy": WIDE}, "metadata": {"annotations": {RECORD: None}}}
    _refused_for_both(cluster, tokens, "held-agent", widened, STRATEGY_MESSAGE)
    # Rewriting the record while held (to restore something wider later) is refused too.
    rewrite = {"metadata": {"annotations": {RECORD: json.dumps(WIDE)}}}
    _refused_for_both(cluster, tokens, "held-agent", rewrite, RECORD_MESSAGE)
    # The type back, the record gone: the product's own release.
    back = {
        "spec": {"updateStrategy": {"type": "RollingUpdate"}},
        "metadata": {"annotations": {RECORD: None}},
    }
    result = _patch_kind(cluster, tokens[WEB], "DaemonSet", "held-agent", back, "merge")
    assert result.returncode == 0, result.stderr
    assert _get_kind(cluster, "DaemonSet", "held-agent")["spec"] == before["spec"]


def test_a_daemonset_a_person_keeps_on_delete_stays_so(
    cluster: RealCluster, tokens: dict[str, str], kind_policies_active: None
) -> None:
    # With rollingUpdate kept, flipping the type alone changes nothing else: only the missing
    # record refuses it.
    kept = {"type": "OnDelete", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}
    _daemonset(cluster, "kept-agent", kept)
    assert _get_kind(cluster, "DaemonSet", "kept-agent")["spec"]["updateStrategy"] == kept
    rolling = {"spec": {"updateStrategy": {"type": "RollingUpdate"}}}
    _refused_for_both(cluster, tokens, "kept-agent", rolling, STRATEGY_MESSAGE)
    # Nor can the record be forged first to make the switch look like a release.
    _refused_for_both(
        cluster,
        tokens,
        "kept-agent",
        {"metadata": {"annotations": {RECORD: json.dumps(WIDE)}}},
        RECORD_MESSAGE,
    )
