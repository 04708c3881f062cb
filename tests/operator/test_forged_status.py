"""Sabotage: a status forged through the status subresource, end to end on both clusters.

docs/status.md#what-the-operator-trusts-in-its-status. Whoever may write
``rolloutanalyses/status`` writes, with ``kubectl patch --subresource=status``, each shape the
operator cannot have written; the running operator (real Prometheus, the test's cluster)
discards it, writes a status without it, records one Warning ``StatusDiscarded`` Event naming
it (once, not once per attempt), and pauses only on failures it measured itself.

- A sequential metric's state with ``through`` a day ahead and evidence far above what is
  needed (before: no step was read again and the metric failed forever; on the real cluster it
  paused the Deployment), with newBad 1e308 over newTotal 1e-300 (an Infinity ratio: every
  status write was refused and the analysis backed off forever), with oldBad 1e-300 over
  oldTotal 1e300 (a ZeroDivisionError in every attempt).
- ``failures: 5`` beside ``lastVerdict: Pass`` (counted again from 0), and beside a real
  ``Inconclusive`` (indistinguishable from a real count: it stands, but pauses nothing; before,
  the next Inconclusive evaluation paused); times a day ahead. Then a real regression pauses
  after exactly ``failureLimit`` failures.

The forgery is a merge patch of the status; the operator's own status write is a PUT with the
resourceVersion it read, so a forgery landing between its read and its write is overwritten
before it is read (a 409, then the decided status re-applied). ``_forge`` writes it again
until the operator has read it.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from sentinel_cluster import kube
from sentinel_core.metric_kinds.sequential import grid
from testkit.clusters import Cluster, kubectl_apply
from testkit.manifests import analysis_manifest, deployment_manifest
from testkit.metrics_app import GaugeSetter
from testkit.observe import condition, deployment_paused, events_for, get_analysis, wait_rows
from testkit.operator import OperatorProcess
from testkit.waiting import wait_until

INTERVAL = 5.0
DAY_AHEAD = "2099-01-01T00:00:00Z"
# Where the test leaves each forgery's Event and the status after it, for the closing note
# (optional): one JSON line per forgery in $SENTINEL_TEST_FORGED_DUMP.<cluster>.jsonl.
DUMP = os.environ.get("SENTINEL_TEST_FORGED_DUMP", "")


def _note(cluster_kind: str, shape: str, **seen: Any) -> None:
    if DUMP:
        with open(f"{DUMP}.{cluster_kind}.jsonl", "a") as out:
            out.write(json.dumps({"shape": shape, **seen}) + "\n")


def _status(client: kube.KubeClient, namespace: str, name: str) -> dict[str, Any]:
    return get_analysis(client, namespace, name).get("status") or {}


def _discards(client: kube.KubeClient, namespace: str, name: str) -> list[str]:
    """Return the StatusDiscarded Events' messages on ``name``, each repeated by its count."""
    found: list[str] = []
    for event in events_for(client, namespace, name):
        if event.get("reason") == "StatusDiscarded":
            assert event.get("type") == "Warning"
            found.extend([str(event.get("message"))] * int(event.get("count") or 1))
    return found


def _patch(cluster: Cluster, namespace: str, name: str, status: Mapping[str, Any]) -> None:
    cluster.kubectl(
        "-n",
        namespace,
        "patch",
        "rolloutanalysis",
        name,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": status}),
    )


def _forge(
    cluster: Cluster,
    client: kube.KubeClient,
    namespace: str,
    name: str,
    forged: Callable[[dict[str, Any]], dict[str, Any]],
    read: Callable[[], bool],
) -> None:
    """Patch ``forged(status)`` until ``read()`` says the operator has read the forgery."""
    for _ in range(4):
        _patch(cluster, namespace, name, forged(_status(client, namespace, name)))
        try:
            wait_until(read, timeout=3 * INTERVAL, interval=0.1, what="the forgery read")
            return
        except AssertionError:
            continue
    raise AssertionError(f"the operator never read the forged status of {name}")


def test_forged_counts_and_times_are_discarded_and_only_real_failures_pause(
    operator: OperatorProcess,
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    namespace: str,
    gauge: GaugeSetter,
    case: str,
    cluster_kind: str,
) -> None:
    name = "checkout"
    kubectl_apply(kube_cluster, deployment_manifest(name, namespace))
    query = f'max(sentinel_test_value{{case="{case}"}})'
    metric: dict[str, Any] = {"name": "latency", "query": query, "maxValue": 0.5}
    kubectl_apply(kube_cluster, analysis_manifest(name, namespace, metrics=[metric]))
    # No series yet: Inconclusive (NoData), nothing counted.
    wait_rows(operator, namespace, name, lambda rows: len(rows) >= 1, what="a first evaluation")
    assert _status(kube_client, namespace, name)["lastVerdict"] == "Inconclusive"

    def discarded(count: int) -> Callable[[], bool]:
        return lambda: len(_discards(kube_client, namespace, name)) >= count

    # failures: 5 beside a real Inconclusive: a count the operator could have written, but did
    # not seal: counted again from 0 (before the seal it stood).
    _forge(kube_cluster, kube_client, namespace, name, lambda s: {"failures": 5}, discarded(1))
    (message,) = _discards(kube_client, namespace, name)
    assert "failures 5 has a seal the operator did not make" in message
    assert "counted again from 0" in message
    rows = wait_rows(
        operator,
        namespace,
        name,
        lambda rows: len(rows) >= 3,
        timeout=4 * INTERVAL,
        what="Inconclusive evaluations after the forged count",
    )
    assert {r["outcome"] for r in rows} == {"Inconclusive"}
    assert {r["failures_after"] for r in rows} == {0}
    assert not any(r["paused"] for r in rows)
    assert not deployment_paused(kube_client, namespace, name)
    paused = condition(get_analysis(kube_client, namespace, name), "RolloutPaused")
    assert (paused["status"], paused["reason"]) == ("False", "NotPaused")
    _note(
        cluster_kind,
        "failures: 5 beside a real Inconclusive",
        event=message,
        outcomes=[(r["outcome"], r["failures_after"], bool(r["paused"])) for r in rows],
        rollout_paused=paused["message"],
        deployment_paused=deployment_paused(kube_client, namespace, name),
    )

    # A Pass resets it; then failures: 5 beside lastVerdict Pass is counted again from 0.
    gauge(0.1)
    wait_until(
        lambda: _status(kube_client, namespace, name).get("lastVerdict") == "Pass",
        timeout=3 * INTERVAL,
        what="a Pass",
    )

    _forge(kube_cluster, kube_client, namespace, name, lambda s: {"failures": 5}, discarded(2))
    (message,) = [m for m in _discards(kube_client, namespace, name) if "sealed" not in m]
    assert "failures 5 follows lastVerdict Pass: only a Fail counts and a Pass resets" in message
    wait_until(
        lambda: _status(kube_client, namespace, name).get("failures") == 0,
        timeout=2 * INTERVAL,
        what="the count from 0",
    )
    after = _status(kube_client, namespace, name)
    _note(
        cluster_kind,
        "failures: 5 beside lastVerdict Pass",
        event=message,
        status={k: after.get(k) for k in ("lastVerdict", "failures")},
    )

    # Times a day ahead: dropped, or moved to now for a condition.
    def ahead(status: dict[str, Any]) -> dict[str, Any]:
        conditions = [
            {**c, "lastTransitionTime": DAY_AHEAD} if c["type"] == "Healthy" else c
            for c in status["conditions"]
        ]
        return {"lastEvaluationTime": DAY_AHEAD, "pausedAt": DAY_AHEAD, "conditions": conditions}

    _forge(kube_cluster, kube_client, namespace, name, ahead, discarded(3))
    (message,) = [m for m in _discards(kube_client, namespace, name) if "failures 5" not in m]
    assert f"lastEvaluationTime {DAY_AHEAD} is in the future" in message
    assert f"pausedAt {DAY_AHEAD} is in the future" in message
    assert f"the Healthy condition's lastTransitionTime {DAY_AHEAD} is in the future" in message
    after = wait_until(
        lambda: (
            (s := _status(kube_client, namespace, name)).get("lastEvaluationTime")
            not in (None, DAY_AHEAD)
            and s
        ),
        timeout=2 * INTERVAL,
        what="a status without the times ahead",
    )
    assert after["pausedAt"] is None
    healthy = next(c for c in after["conditions"] if c["type"] == "Healthy")
    assert healthy["lastTransitionTime"] < DAY_AHEAD
    _note(
        cluster_kind,
        f"lastEvaluationTime, pausedAt and Healthy's lastTransitionTime {DAY_AHEAD}",
        event=message,
        status={
            "lastEvaluationTime": after["lastEvaluationTime"],
            "pausedAt": after["pausedAt"],
            "healthy.lastTransitionTime": healthy["lastTransitionTime"],
        },
    )

    # A real regression. After its first Fail, failures: 2 beside it (what the operator writes
    # after a second one) would bring the pause one evaluation early: it is not sealed, so the
    # count starts from 0 again and the pause comes after failureLimit (3) Fails in a row that
    # the operator counted.
    gauge(0.9)
    wait_rows(
        operator,
        namespace,
        name,
        lambda rows: rows[-1]["outcome"] == "Fail",
        timeout=3 * INTERVAL,
        what="a first Fail",
    )
    # One more than counted: forged from the status as read, so never the value already there.
    _forge(
        kube_cluster,
        kube_client,
        namespace,
        name,
        lambda s: {"failures": s["failures"] + 1},
        discarded(4),
    )
    (message,) = [
        m
        for m in _discards(kube_client, namespace, name)
        if "has a seal the operator did not make" in m and "failures 5" not in m
    ]
    assert re.search(r"failures [23] has a seal the operator did not make", message)
    rows = wait_rows(
        operator,
        namespace,
        name,
        lambda rows: any(r["paused"] for r in rows),
        timeout=6 * INTERVAL,
        what="the pause",
    )
    fails = [(r["failures_after"], bool(r["paused"])) for r in rows if r["outcome"] == "Fail"]
    # The last Fails counted 1, 2, 3 from the discarded count, after at least one counted
    # before it; only the third paused.
    assert fails[-3:] == [(1, False), (2, False), (3, True)] and len(fails) >= 4
    assert [paused for _, paused in fails].count(True) == 1
    assert deployment_paused(kube_client, namespace, name)
    # Once per discard: four forgeries, four Events, however many attempts since (the
    # operator's own sealed status verifies every time on the API server's round trip).
    assert len(_discards(kube_client, namespace, name)) == 4
    _note(
        cluster_kind,
        "failures: 2 beside a real Fail, then the regression",
        event=message,
        fails=fails,
        rollout_paused=condition(get_analysis(kube_client, namespace, name), "RolloutPaused"),
        discard_events=len(_discards(kube_client, namespace, name)),
    )

    # A status written before the seal existed (an upgrade): the seal removed. The pause is the
    # target's record and the RolloutPaused condition, neither sealed: it stays, and the count
    # read afresh is not a second pause.
    _forge(kube_cluster, kube_client, namespace, name, lambda s: {"seal": None}, discarded(5))
    (message,) = [m for m in _discards(kube_client, namespace, name) if "has no seal" in m]
    assert re.search(r"failures \d+ has no seal", message)
    seen = len(operator.evaluations(namespace, name))
    wait_rows(
        operator,
        namespace,
        name,
        lambda rows: len(rows) >= seen + 2,
        timeout=4 * INTERVAL,
        what="evaluations after the seal was removed",
    )
    assert deployment_paused(kube_client, namespace, name)
    paused = condition(get_analysis(kube_client, namespace, name), "RolloutPaused")
    assert (paused["status"], paused["reason"]) == ("True", "FailureLimitReached")
    assert _status(kube_client, namespace, name).get("seal", "").startswith("v1:")
    _note(
        cluster_kind,
        "seal removed from a paused analysis (an upgrade)",
        event=message,
        rollout_paused=paused,
        deployment_paused=deployment_paused(kube_client, namespace, name),
    )

    # A pause recorded by a version before paused-before (docs/operator.md#upgrading): adopted
    # once, with paused-before "false" written back and a PauseAdopted event; still paused.
    before = "sentinel.example.com/paused-before"
    kube_cluster.kubectl("-n", namespace, "annotate", "deployment", name, f"{before}-")

    def adopted() -> dict[str, Any] | None:
        for event in events_for(kube_client, namespace, name):
            if event.get("reason") == "PauseAdopted":
                return event
        return None

    event = wait_until(adopted, timeout=3 * INTERVAL, what="the PauseAdopted event")
    assert event["type"] == "Normal"
    assert event["message"].startswith(f"adopted the pause of Deployment {name} recorded by")
    deployment = kube_client.request("GET", kube.workload_path("Deployment", namespace, name))
    assert deployment["metadata"]["annotations"][before] == "false"
    assert deployment["spec"]["paused"] is True
    paused = condition(get_analysis(kube_client, namespace, name), "RolloutPaused")
    assert (paused["status"], paused["reason"]) == ("True", "FailureLimitReached")
    _note(
        cluster_kind,
        "paused-before removed from the paused Deployment (an earlier version's record)",
        event=event["message"],
        annotations={
            k: v for k, v in deployment["metadata"]["annotations"].items() if "sentinel" in k
        },
        rollout_paused=paused,
    )


def test_a_forged_sequential_state_is_discarded_and_the_status_written_again(
    operator: OperatorProcess,
    kube_cluster: Cluster,
    kube_client: kube.KubeClient,
    namespace: str,
    case: str,
    cluster_kind: str,
) -> None:
    name = "orders"
    kubectl_apply(kube_cluster, deployment_manifest(name, namespace))
    errors = f'sentinel_test_requests_total{{case="{case}"'
    metric = {
        "name": "errors-vs-old",
        "sequential": {
            "bad": errors + ', code="500"}',
            "total": errors + "}",
            "maxIncrease": {"percent": 10},
        },
    }
    manifest = analysis_manifest(name, namespace, target=name, metrics=[metric], failure_limit=1)
    kubectl_apply(kube_cluster, manifest)
    wait_rows(operator, namespace, name, lambda rows: len(rows) >= 1, what="a first evaluation")
    if cluster_kind == "real":
        # The controller manager made a ReplicaSet: the operator keeps a state of the new pods
        # (no old side: Inconclusive). devcluster makes none, so no state is kept there.
        wait_until(
            lambda: "sequential" in _status(kube_client, namespace, name)["metricResults"][0],
            timeout=4 * INTERVAL,
            what="the operator's sequential state",
        )

    def state_with(**fields: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
        def forged(status: dict[str, Any]) -> dict[str, Any]:
            (result,) = status["metricResults"]
            now = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=1)
            base = result.get("sequential") or {
                "key": "forged/1",
                "since": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "through": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "steps": 0,
                "newBad": 0,
                "newTotal": 0,
                "oldBad": 0,
                "oldTotal": 0,
                "logRatios": [],
                "dispersion": {"excess": 0, "weight": 0},
            }
            return {"metricResults": [{**result, "sequential": {**base, **fields}}]}

        return forged

    def discarded(count: int) -> Callable[[], bool]:
        return lambda: len(_discards(kube_client, namespace, name)) >= count

    shapes = [
        (
            "through a day ahead, evidence e^30",
            state_with(
                through=DAY_AHEAD,
                steps=3,
                newBad=1000,
                newTotal=1000,
                oldBad=10,
                oldTotal=1000,
                logRatios=[30.0] * 24,
            ),
            f"has through {DAY_AHEAD} in the future",
        ),
        (
            "newBad 1e308 over newTotal 1e-300",
            state_with(newBad=1e308, newTotal=1e-300),
            "counts more than 1e+15 events",
        ),
        (
            "oldBad 1e-300 over oldTotal 1e300",
            state_with(oldBad=1e-300, oldTotal=1e300),
            "counts more than 1e+15 events",
        ),
    ]
    for index, (shape, forged, problem) in enumerate(shapes, start=1):
        _forge(kube_cluster, kube_client, namespace, name, forged, discarded(index))
        # Events are listed by name, not in order: this shape's is among them, as often as the
        # shapes so far with its problem.
        messages = _discards(kube_client, namespace, name)
        said = f"metricResults[errors-vs-old].sequential {problem}: the evidence starts afresh"
        assert sum(said in m for m in messages) == sum(p == problem for _, _, p in shapes[:index])

        # The status is written again: no Infinity, nothing ahead, evidence 1 again.
        def rewritten() -> dict[str, Any] | None:
            status = _status(kube_client, namespace, name)
            state = status["metricResults"][0].get("sequential")
            if state is None:
                return status if cluster_kind == "dev" else None
            clean = state["through"] < DAY_AHEAD and state["newBad"] <= state["newTotal"] < 1e15
            return status if clean and state["oldTotal"] < 1e15 else None

        status = wait_until(rewritten, timeout=3 * INTERVAL, what="the status written again")
        assert status["metricResults"][0]["verdict"] == "Inconclusive"
        if cluster_kind == "real":
            state = status["metricResults"][0]["sequential"]
            assert state["evidence"] == 1.0 and state["ratio"] is None
        assert status["failures"] == 0 and status["lastVerdict"] == "Inconclusive"
        _note(
            cluster_kind,
            f"sequential state: {shape}",
            event=next(m for m in messages if said in m),
            status_after=status["metricResults"][0],
        )

    # A state every check above passes: one step tiling since..through, counts adding up, log
    # ratios within what 1000 bad new events can give, evidence ~e^50 far above the ~20 needed.
    # The operator could have written it but did not seal it: read again from the rollout's
    # start (before the seal, the next evaluation failed and, at failureLimit 1, paused).
    def consistent(status: dict[str, Any]) -> dict[str, Any]:
        since = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=1)
        key = ((status["metricResults"][0].get("sequential") or {}).get("key")) or "forged/1"
        steps = [math.log(float(point)) for point in grid(1.0)]
        return state_with(
            key=key,
            since=since.strftime("%Y-%m-%dT%H:%M:%SZ"),
            through=(since + timedelta(seconds=INTERVAL)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            steps=1,
            newBad=1000,
            newTotal=1000,
            oldBad=10,
            oldTotal=1000,
            logRatios=[round(50 * step, 6) for step in steps],
        )(status)

    _forge(kube_cluster, kube_client, namespace, name, consistent, discarded(len(shapes) + 1))
    said = "the sequential state of errors-vs-old has a seal the operator did not make"
    (message,) = [m for m in _discards(kube_client, namespace, name) if said in m]
    assert "the evidence starts afresh from the rollout" in message
    status = wait_until(rewritten, timeout=3 * INTERVAL, what="the status written again")
    if cluster_kind == "real":
        assert status["metricResults"][0]["sequential"]["evidence"] == 1.0
    assert status["metricResults"][0]["verdict"] == "Inconclusive"
    _note(
        cluster_kind,
        "sequential state: self-consistent, evidence e^50, unsealed",
        event=message,
        status_after=status["metricResults"][0],
    )
    shapes.append(("self-consistent", consistent, "unsealed"))

    # Never paused on forged evidence (failureLimit 1); each forgery one Event.
    wait_rows(operator, namespace, name, lambda rows: len(rows) >= 2, what="evaluations")
    rows = operator.evaluations(namespace, name)
    assert not any(r["paused"] for r in rows) and {r["outcome"] for r in rows} == {"Inconclusive"}
    assert not deployment_paused(kube_client, namespace, name)
    assert len(_discards(kube_client, namespace, name)) == len(shapes)
