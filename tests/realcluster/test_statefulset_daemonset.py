"""A StatefulSet and a DaemonSet rolling running pods, held mid-way by the operator and released.

docs/status.md#pausing-each-kind. kube-apiserver, etcd, kube-controller-manager, kube-scheduler
and kwok with four simulated nodes (the session's ``testkit.realcluster.RealCluster``, shared
through tests/support/pod_fixtures.py); the pods' metrics
served at their own IPs (``testkit.pod_server.PodServer``); the Prometheus 3.x that discovers
them, so every series carries the ``controller_revision_hash`` the real controllers gave its
pod; ``manage.py runoperator``; the real kubectl; the REST API on a live server.

The story, for both kinds at once (one cluster, one namespace, one operator): a StatefulSet of 5
(``podManagementPolicy: Parallel``) and a DaemonSet on the 4 nodes, each step of their rolling
updates held 15 s by ``minReadySeconds``, are healthy. A new image rolls out whose pods answer
three times slower. The operator detects each rollout as the new revision the controller rolls
out, begun when its ControllerRevision was created. A ``compare`` metric of each analysis tells
the new pods from the old by ``controller_revision_hash`` (its default for these kinds) and
fails, and so does the StatefulSet analysis's ``sequential`` metric (the share of requests
slower than 0.25 s); after ``failureLimit`` the operator freezes the StatefulSet's partition at
its lowest updated ordinal and switches the DaemonSet to ``OnDelete``, mid-rollout. For longer
than two intervals and than a rollout step, no pod changes. The new pods recover (the
sequential evidence stays: it is never taken back); ``POST …/resume/`` of the REST API restores
the StatefulSet's partition and the admin's "Resume rollout" button the DaemonSet's rolling
update, the sequential metric counts afresh from the resume, and ``kubectl rollout status`` sees
both rollouts complete.
``kubectl get sts,ds,pods`` before, during and after, and the events, are printed (``-s``).
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from accounts import tokens
from analyses import mirror
from sentinel_cluster import kube
from testkit.clusters import kubectl_apply
from testkit.manifests import analysis_manifest, workload_manifest
from testkit.observe import condition, event_reasons, events_for, get_analysis, wait_condition
from testkit.operator import OperatorProcess
from testkit.pod_server import Behaviour, PodServer, kwok_pod_spec
from testkit.prometheus import PrometheusServer
from testkit.realcluster import RealCluster
from testkit.waiting import wait_until
from tests.api.client import ALL_PERMISSIONS, Api, make_user
from tests.support.cluster_fixtures import POD_NODES

# The REST API runs on a live server.
pytestmark = pytest.mark.django_db(transaction=True)

# The session realcluster's nodes (the DaemonSet runs on each).
NODES = POD_NODES
REPLICAS = 5
MIN_READY_SECONDS = 15
INTERVAL = 5.0
FAILURE_LIMIT = 2
# name -> kind of the two targets; each pod's image names its workload and version.
TARGETS = {"db": "StatefulSet", "agent": "DaemonSet"}
IMAGE = "registry.example.com/shop/{}:{}"
PAUSED_BY = "sentinel.example.com/paused-by"


def _workload(kind: str, name: str, namespace: str, version: str, port: int) -> dict[str, Any]:
    """Return the target on kwok's nodes, one rollout step per ``MIN_READY_SECONDS``."""
    workload = workload_manifest(
        kind, name, namespace, IMAGE.format(name, version), replicas=REPLICAS
    )
    spec = workload["spec"]
    spec["template"]["spec"] = kwok_pod_spec(spec["template"]["spec"], port)
    spec["minReadySeconds"] = MIN_READY_SECONDS
    if kind == "StatefulSet":
        # Created all at once; its rolling update still goes one ordinal at a time.
        spec["podManagementPolicy"] = "Parallel"
    return workload


def _latency_vs_old(namespace: str, name: str) -> dict[str, Any]:
    """Each pod's mean latency over 10 s, new pods against old (``by`` left to its default)."""
    selector = f'namespace="{namespace}", app="{name}"'
    return {
        "name": "latency-vs-old",
        "query": (
            f"rate(http_request_duration_seconds_sum{{{selector}}}[10s]) / "
            f"rate(http_request_duration_seconds_count{{{selector}}}[10s])"
        ),
        "compare": {"maxEffect": {"percent": 50}, "lookback": "30s", "minSamples": 3},
    }


def _slow_vs_old(namespace: str) -> dict[str, Any]:
    """The share of requests slower than 0.25 s, new pods against old, judged sequentially."""
    histogram = f'http_request_duration_seconds{{namespace="{namespace}", app="db"}}'
    return {"name": "slow-vs-old", "sequential": {"histogram": histogram, "slowerThan": 0.25}}


def _metrics(namespace: str, name: str) -> list[dict[str, Any]]:
    """The StatefulSet's analysis judges a sequential metric too (docs/analysis.md)."""
    metrics = [_latency_vs_old(namespace, name)]
    return [*metrics, _slow_vs_old(namespace)] if name == "db" else metrics


def _result(analysis: dict[str, Any], metric: str) -> dict[str, Any]:
    return next(r for r in analysis["status"]["metricResults"] if r["name"] == metric)


def _revision_created(cluster: RealCluster, namespace: str, name: str, revision: str) -> str:
    """Return when ``name``'s ControllerRevision whose pods carry ``revision`` was created."""
    listed = json.loads(
        cluster.kubectl("get", "controllerrevisions", "-n", namespace, "-o", "json").stdout
    )
    (created,) = [
        item["metadata"]["creationTimestamp"]
        for item in listed["items"]
        if item["metadata"]["ownerReferences"][0]["name"] == name
        and revision
        in (item["metadata"]["name"], item["metadata"]["labels"].get("controller-revision-hash"))
    ]
    return str(created)


def _pods(cluster: RealCluster, namespace: str, name: str) -> dict[str, tuple[str, str]]:
    """Return the workload's pods: name -> (uid, controller-revision-hash)."""
    listed = json.loads(
        cluster.kubectl("get", "pods", "-n", namespace, "-l", f"app={name}", "-o", "json").stdout
    )
    return {
        pod["metadata"]["name"]: (
            pod["metadata"]["uid"],
            pod["metadata"]["labels"].get("controller-revision-hash", ""),
        )
        for pod in listed["items"]
    }


def _get(client: kube.KubeClient, namespace: str, name: str) -> dict[str, Any]:
    return client.request("GET", kube.workload_path(TARGETS[name], namespace, name))


def _settled(cluster: RealCluster, client: kube.KubeClient, namespace: str, name: str) -> bool:
    """Return whether every pod the controller wants is there, Running and served."""
    status = _get(client, namespace, name).get("status") or {}
    wanted = REPLICAS if TARGETS[name] == "StatefulSet" else NODES
    ready = (
        status.get("readyReplicas") if TARGETS[name] == "StatefulSet" else status.get("numberReady")
    )
    return ready == wanted and len(_pods(cluster, namespace, name)) == wanted


def _revisions(cluster: RealCluster, namespace: str, name: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for _, revision in _pods(cluster, namespace, name).values():
        counts[revision] = counts.get(revision, 0) + 1
    return counts


def _show(cluster: RealCluster, namespace: str, when: str) -> None:
    label = "controller-revision-hash"
    shown = cluster.kubectl("get", "sts,ds,pods", "-n", namespace, "-L", label).stdout.rstrip()
    print(f"\n$ kubectl get sts,ds,pods -L {label}   # {when}\n{shown}")


def _rollout_status(cluster: RealCluster, namespace: str, name: str) -> None:
    kind = TARGETS[name].lower()
    cluster.kubectl("rollout", "status", "-n", namespace, f"{kind}/{name}", "--timeout=120s")


def _resume_through_the_api(
    live_server: Any, client: kube.KubeClient, namespace: str, name: str
) -> dict[str, Any]:
    """``POST …/resume/`` as a person holding every permission; return the answer."""
    # The web app reads its mirror, which the operator's watch keeps in a deployment; here the
    # operator has a database of its own, so the analysis is mirrored into the web app's.
    mirror.upsert_from_resource(get_analysis(client, namespace, name))
    issued = tokens.issue(make_user(*ALL_PERMISSIONS), now=timezone.now())
    api = Api(f"{live_server.url}/api/v1/", {"Authorization": f"Token {issued.plaintext}"})
    response = api.post(f"analyses/{namespace}/{name}/resume/")
    assert response.status_code == 200, response.text
    return dict(response.json())


def _resume_through_the_ui(client: kube.KubeClient, namespace: str, name: str) -> str:
    """The admin's "Resume rollout" button as a superuser; return the page it lands on."""
    row = mirror.upsert_from_resource(get_analysis(client, namespace, name))[0]
    person = User.objects.create_superuser(f"ui-{name}", f"{name}@example.com", "x")
    browser = Client()
    browser.force_login(person)
    page = browser.post(reverse("admin:analyses_analysis_resume", args=[row.pk]), follow=True)
    assert page.status_code == 200
    return page.content.decode()


@pytest.mark.slow
def test_a_statefulset_and_a_daemonset_are_held_mid_rollout_and_released(
    real_cluster: RealCluster,
    real_client: kube.KubeClient,
    real_namespace: str,
    pods: PodServer,
    pod_prometheus: PrometheusServer,
    real_operator: OperatorProcess,
    live_server: Any,
    settings: Any,
) -> None:
    namespace, client, cluster = real_namespace, real_client, real_cluster
    settings.SENTINEL_KUBECONFIG = str(cluster.kubeconfig)
    started = time.monotonic()
    for name, kind in TARGETS.items():
        kubectl_apply(cluster, _workload(kind, name, namespace, "1.0", pods.port))
    for name in TARGETS:
        _rollout_status(cluster, namespace, name)
    pods.wait_served(lambda served: len(served) == REPLICAS + NODES)
    old = {name: set(_revisions(cluster, namespace, name)) for name in TARGETS}
    assert all(len(revisions) == 1 for revisions in old.values()), old
    print(f"\nversion 1: {REPLICAS} + {NODES} pods in {time.monotonic() - started:.1f} s")
    for name, kind in TARGETS.items():
        kubectl_apply(
            cluster,
            analysis_manifest(
                name,
                namespace,
                target=name,
                kind=kind,
                metrics=_metrics(namespace, name),
                interval=f"{INTERVAL:.0f}s",
                failure_limit=FAILURE_LIMIT,
            ),
        )
        ready = wait_condition(client, namespace, name, "Ready", "Evaluating", timeout=20)
        # Nothing to compare yet: one revision only, said in the kind's terms.
        healthy = condition(ready, "Healthy")
        assert healthy["reason"] == "NoComparison"
        assert f"no pods of the {kind} run an older controller revision" in healthy["message"]
        # The revision the controller rolled out, not seen to begin.
        assert set(ready["status"]["rollout"]) == {"templateHash"}
        assert {ready["status"]["rollout"]["templateHash"]} == old[name]
    shown = cluster.kubectl("get", "ra", "-n", namespace).stdout
    print(f"\n$ kubectl get ra\n{shown.rstrip()}")
    assert {tuple(line.split()[:3]) for line in shown.splitlines()[1:]} == {
        (name, kind, name) for name, kind in TARGETS.items()
    }
    _show(cluster, namespace, "before the rollout")

    # Version 2 answers three times slower; the controllers replace one pod per 15 s.
    rollout = time.monotonic()
    new_revision: dict[str, str] = {}
    for name in TARGETS:
        pods.behave(Behaviour(latency=0.3), image=IMAGE.format(name, "2.0"))
        cluster.kubectl(
            "-n", namespace, "set", "image", f"{TARGETS[name].lower()}/{name}",
            f"app={IMAGE.format(name, '2.0')}",
        )  # fmt: skip
    for name in TARGETS:
        paused = wait_condition(
            client, namespace, name, "RolloutPaused", "FailureLimitReached", timeout=90
        )
        print(f"{TARGETS[name]} {name}: set image -> paused in {time.monotonic() - rollout:.1f} s")
        assert paused["status"]["failures"] == FAILURE_LIMIT
        result = paused["status"]["metricResults"][0]
        assert result["verdict"] == "Fail", result
        comparison = result["comparison"]
        # The sides are the real controllers' revisions, as the pods carry them.
        assert comparison["oldHashes"] and comparison["newHash"] not in old[name]
        assert set(comparison["oldHashes"]) >= old[name]
        # Detected as the revision the controller rolls out, begun when it was created.
        new = new_revision[name] = comparison["newHash"]
        detected = paused["status"]["rollout"]
        assert detected == {
            "templateHash": new,
            "startedAt": _revision_created(cluster, namespace, name, new),
        }
        if name == "db":
            assert _get(client, namespace, "db")["status"]["updateRevision"] == new
        messages = [
            e.get("message", "")
            for e in events_for(client, namespace, name)
            if e["reason"] == "RolloutDetected"
        ]
        assert len(messages) == 1
        assert messages[0].startswith(f"new controller revision {new} on {TARGETS[name]} {name}")

    # The sequential metric judges the same new pods, by the same revision label.
    sequential = wait_until(
        lambda: (
            _result(found := get_analysis(client, namespace, "db"), "slow-vs-old")["verdict"]
            == "Fail"
            and _result(found, "slow-vs-old")
        ),
        timeout=60,
        what="the sequential metric to fail",
    )
    evidence = sequential["sequential"]
    print(f"StatefulSet db: slow-vs-old {sequential['message']}")
    assert evidence["key"].startswith(f"{new_revision['db']}/")
    assert evidence["evidence"] >= evidence["needed"] and evidence["oldTotal"] > 0

    # Held: let the pod being replaced at the pause settle, then nothing changes.
    for name in TARGETS:
        wait_until(
            lambda name=name: _settled(cluster, client, namespace, name),
            timeout=30,
            what=f"{name} settled",
        )
    statefulset = _get(client, namespace, "db")
    partition = statefulset["spec"]["updateStrategy"]["rollingUpdate"]["partition"]
    annotations = statefulset["metadata"]["annotations"]
    assert annotations[PAUSED_BY] == f"{namespace}/db"
    assert annotations["sentinel.example.com/partition-before"] == "0"
    assert 0 < partition < REPLICAS
    daemonset = _get(client, namespace, "agent")
    assert daemonset["spec"]["updateStrategy"]["type"] == "OnDelete"
    frozen = {name: _pods(cluster, namespace, name) for name in TARGETS}
    revisions = {name: _revisions(cluster, namespace, name) for name in TARGETS}
    for name, counts in revisions.items():
        # Mid-rollout: old and new pods side by side.
        assert len(counts) == 2 and all(counts.values()), (name, counts)
    # The StatefulSet's updated pods are the ordinals at and above the partition (and the one
    # below it, when its replacement was under way as the status the pause read was written).
    new_db = {
        int(pod.rsplit("-", 1)[1]) for pod, (_, rev) in frozen["db"].items() if rev not in old["db"]
    }
    assert set(range(partition, REPLICAS)) <= new_db <= set(range(partition - 1, REPLICAS))
    _show(cluster, namespace, "held by the operator")
    for name in TARGETS:
        held = _get(client, namespace, name)
        kept = {
            key: value
            for key, value in held["metadata"]["annotations"].items()
            if key.startswith("sentinel.example.com/")
            and key != "sentinel.example.com/pause-reason"
        }
        print(f"{TARGETS[name]} {name}: updateStrategy {held['spec']['updateStrategy']}, {kept}")
    held_at = time.monotonic()
    watch_until = held_at + max(2 * INTERVAL, MIN_READY_SECONDS) + 2
    watched = 0
    while time.monotonic() < watch_until or watched < 4:
        for name in TARGETS:
            assert _pods(cluster, namespace, name) == frozen[name], name
        watched += 1
        time.sleep(0.5)
    for name in TARGETS:
        still = get_analysis(client, namespace, name)
        assert condition(still, "RolloutPaused")["reason"] == "FailureLimitReached"
    _show(cluster, namespace, f"{time.monotonic() - held_at:.0f} s into the hold")
    print(f"held for {time.monotonic() - held_at:.1f} s ({watched} reads): {revisions}")

    # The new pods recover; a person resumes each (the StatefulSet through the REST API, the
    # DaemonSet through the admin), which restores the partition and the strategy, and the
    # controllers finish the rollouts.
    for name in TARGETS:
        pods.behave(Behaviour(latency=0.1), image=IMAGE.format(name, "2.0"))
    for name in TARGETS:
        # Once the slow samples left the lookback: resumed earlier, it would pause again. The
        # sequential evidence of this rollout stays (it is never taken back); the resume
        # starts it afresh.
        wait_until(
            lambda name=name: (
                _result(get_analysis(client, namespace, name), "latency-vs-old")["verdict"]
                == "Pass"
            ),
            timeout=60,
            what=f"{name}'s new pods to pass",
        )
    assert _result(get_analysis(client, namespace, "db"), "slow-vs-old")["verdict"] == "Fail"
    resumed = time.monotonic()
    # The StatefulSet from the REST API, the DaemonSet from the admin's button.
    answer = _resume_through_the_api(live_server, client, namespace, "db")
    assert condition(answer, "RolloutPaused")["reason"] == "ResumedByUser", answer
    page = _resume_through_the_ui(client, namespace, "agent")
    assert f"DaemonSet {namespace}/agent is rolling out again" in page, page
    answer = get_analysis(client, namespace, "agent")
    assert condition(answer, "RolloutPaused")["reason"] == "ResumedByUser", answer
    restored = _get(client, namespace, "db")
    assert restored["spec"]["updateStrategy"]["rollingUpdate"]["partition"] == 0
    assert _get(client, namespace, "agent")["spec"]["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0},
    }
    for name in TARGETS:
        _rollout_status(cluster, namespace, name)
    print(f"resume -> both rollouts complete in {time.monotonic() - resumed:.1f} s")
    _show(cluster, namespace, "after the release")
    for name in TARGETS:
        counts = _revisions(cluster, namespace, name)
        assert len(counts) == 1 and not set(counts) & old[name], (name, counts)
        after = get_analysis(client, namespace, name)
        assert condition(after, "RolloutPaused")["reason"] == "ResumedByUser"
        if name == "db":
            # Counted afresh from the resume: the recovered pods gave it no evidence of harm.
            judged = _result(after, "slow-vs-old")
            assert judged["verdict"] != "Fail", judged
            print(f"StatefulSet db after the release: slow-vs-old {judged['message']}")
        assert not any(
            key.startswith("sentinel.example.com/")
            for key in _get(client, namespace, name)["metadata"].get("annotations", {})
        )
        reasons = event_reasons(client, namespace, name)
        assert reasons.count("RolloutPaused") == 1 and reasons.count("RolloutResumed") == 1
        print(f"\n$ kubectl describe ra {name}   # events")
        events = events_for(client, namespace, name)
        for event in sorted(events, key=lambda e: str(e.get("firstTimestamp") or "")):
            print(f"  {event['type']:8} {event['reason']:16} {event.get('message', '')[:150]}")
    print(f"whole story: {time.monotonic() - started:.1f} s")
