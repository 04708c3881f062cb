"""The backtest's replay is the live verdict: rollouts judged live, then replayed afterwards.

docs/backtest.md. The session's real control plane with kwok's nodes, the pods' metrics served
at their own IPs (``testkit.pod_server.PodServer``), the Prometheus 3.x that discovers them, one
``manage.py runoperator`` judging live, the real kubectl.

The story: a Deployment ``web`` of 2 and, beside it at the same time, a StatefulSet ``db`` of 2
whose rolling update stops at partition 1 (only ``db-1`` takes a new template, ``db-0`` keeps the
first: new and old pods serve side by side) are judged live every 10 s (pause after 2
consecutive failures). ``web``'s analysis has a threshold (the error ratio) and a
``beforeRollout`` baseline (the slowest pod's latency may not double from when the rollout
began); ``db``'s a threshold on its latency, a ``compare`` of each pod's mean latency and a
``sequential`` count of errors, new pods against old. Then, each started right after a live
evaluation, and not before the replayed instant that evaluation stands for (so the live
evaluations fall where the replay's will, see docs/backtest.md#which-instants-and-which-queries):

- ``web`` 2 and ``db`` 2: good (``web`` 2 fails 3 % of its requests, under the 5 % threshold);
- ``web`` 3 and ``db`` 3: a latency regression (0.5 s; ``db`` 3 fails half its requests too):
  the operator pauses both; ``db`` 3's old side is ``db-0``'s first revision, not the revision
  it replaced (whose pod is gone); a person fixes ``web`` forward (``kubectl set image`` and
  ``rollout resume``);
- ``web`` 4: an error-rate regression (half the requests fail): paused; a person resumes and
  rolls back to ``web`` 2 (``kubectl rollout undo --to-revision=2``).

Then the same specs, created afterwards as drafts, are backtested (``manage.py backtest --spec
--json`` for ``web``, the same code in process for ``db``): every live evaluation has a replayed
one within one interval whose verdict is the same, and each metric's (a ``sequential`` one
lagging one evaluation where the live one began before its replayed instant, see
``_assert_replay_is_live``), and each live pause is the replay's
``wouldPauseAt`` at the same evaluation. A draft with a tighter error threshold (1 %) would also
have paused the good ``web`` 2. The live-versus-replay table is printed (``-s``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from sentinel_cluster import kube, past_revisions
from sentinel_core.backtest import PastRevision
from sentinel_core.values import parse_time
from sentinel_operator.backtest import Backtest, Replayer
from sentinel_operator.prometheus import PrometheusClient
from sentinel_operator.providers import Providers
from testkit.clusters import kubectl_apply
from testkit.manifests import analysis_manifest, rollout_analysis, workload_manifest
from testkit.observe import condition, get_analysis, wait_rows
from testkit.operator import OperatorProcess
from testkit.paths import MANAGE, REPO_ROOT
from testkit.pod_server import Behaviour, PodServer, kwok_deployment, kwok_pod_spec
from testkit.prometheus import PrometheusServer
from testkit.realcluster import RealCluster
from testkit.site_env import with_defaults
from testkit.waiting import wait_until

INTERVAL = 10.0
FAILURE_LIMIT = 2
REPLICAS = 2
IMAGE = "registry.example.com/shop/{}:{}"
# Enough requests that 3 % errors stay well between the two thresholds over 10 s.
RPS = 50.0
GOOD = Behaviour(latency=0.1, rps=RPS)
DB_GOOD = Behaviour(latency=0.125, spread=0.0, rps=RPS)


def _selector(namespace: str, app: str) -> str:
    return f'{{namespace="{namespace}",app="{app}"}}'


def _slowest(namespace: str, app: str) -> str:
    """The slowest pod's mean latency over 10 s."""
    s = _selector(namespace, app)
    return (
        f"max(rate(http_request_duration_seconds_sum{s}[10s]) / "
        f"rate(http_request_duration_seconds_count{s}[10s]))"
    )


def _web_spec(namespace: str, max_errors: float) -> dict[str, Any]:
    s = _selector(namespace, "web")
    errors = (
        f"sum(rate(http_request_errors_total{s}[10s])) / sum(rate(http_requests_total{s}[10s]))"
    )
    return _spec(
        "Deployment",
        "web",
        [
            {"name": "error-ratio", "query": errors, "maxValue": max_errors},
            {
                "name": "latency",
                "query": _slowest(namespace, "web"),
                "maxIncrease": {"percent": 100},
                "baseline": {"beforeRollout": True},
            },
        ],
    )


def _db_spec(namespace: str) -> dict[str, Any]:
    s = _selector(namespace, "db")
    latency = {"name": "latency", "query": _slowest(namespace, "db"), "maxValue": 0.3}
    # Each pod's mean latency since it started: plain selectors, so a pod's series ends with
    # the pod (Prometheus's staleness marker), as the old side live ends with its pods.
    means = f"http_request_duration_seconds_sum{s} / http_request_duration_seconds_count{s}"
    compare = {
        "name": "new-vs-old",
        "query": means,
        "compare": {"lookback": "30s", "minSamples": 3},
    }
    errors = {
        "name": "errors",
        "sequential": {"bad": f"http_request_errors_total{s}", "total": f"http_requests_total{s}"},
    }
    return _spec("StatefulSet", "db", [latency, compare, errors])


def _spec(kind: str, name: str, metrics: list[dict[str, Any]]) -> dict[str, Any]:
    manifest = analysis_manifest(
        f"{name}-guard",
        "-",
        target=name,
        kind=kind,
        metrics=metrics,
        interval=f"{INTERVAL:.0f}s",
        failure_limit=FAILURE_LIMIT,
    )
    return dict(manifest["spec"])


def _statefulset(namespace: str, version: str, port: int) -> dict[str, Any]:
    sts = workload_manifest(
        "StatefulSet", "db", namespace, IMAGE.format("db", version), replicas=REPLICAS
    )
    sts["spec"]["template"]["spec"] = kwok_pod_spec(sts["spec"]["template"]["spec"], port)
    sts["spec"]["podManagementPolicy"] = "Parallel"
    # Only the pod db-1 takes a new template: db-0 stays on the first revision, so the new
    # pods and the old ones serve side by side throughout (compare, sequential), and a later
    # rollout's old side is the first revision, not the one it replaced (gone by then).
    sts["spec"]["updateStrategy"] = {"type": "RollingUpdate", "rollingUpdate": {"partition": 1}}
    return sts


class Live:
    """The live history of one analysis, and starting changes right after its evaluations."""

    def __init__(
        self,
        operator: OperatorProcess,
        client: kube.KubeClient,
        namespace: str,
        name: str,
        target: tuple[str, str],
    ) -> None:
        self.operator, self.client, self.namespace, self.name = operator, client, namespace, name
        self.target = target
        self.seen = 0
        # When the target's newest revision was created, as the API server keeps it (to the
        # second): the replay's instants are this plus whole intervals.
        self.rollout_start: datetime | None = None

    def revisions(self) -> list[PastRevision]:
        kind, name = self.target
        workload = self.client.request("GET", kube.workload_path(kind, self.namespace, name))
        return list(past_revisions.read(self.client, kind, workload))

    def new_revision_created(self, before: int) -> datetime:
        """Wait for the controller to create the change's revision; return its creation time."""

        def grown() -> list[PastRevision] | None:
            found = self.revisions()
            return found if len(found) > before else None

        revisions = wait_until(grown, timeout=30, what=f"a new revision of {self.target[1]}")
        return max(revisions, key=lambda r: (r.created, r.first)).created

    def before_next_rollout(self, rows: list[dict[str, Any]]) -> None:
        """Wait until the replayed instant nearest the last live evaluation has passed.

        The replay evaluates at the revision's creation second plus whole intervals, and ends
        a rollout where the next revision's creation second ends; live, the evaluations fall
        where the dispatcher started them, up to a second or two away from those instants. A
        change made right after a live evaluation but before that evaluation's replayed
        instant would put the instant in the next rollout: the replay would hold one
        evaluation fewer than the live history (docs/backtest.md#which-instants-and-which-
        queries). A person acting on a pause takes longer than that; the test waits for it.
        """
        if self.rollout_start is None or not rows:
            return
        step = timedelta(seconds=INTERVAL)
        evaluations = round((_when(rows[-1]) - self.rollout_start) / step)
        instant = self.rollout_start + evaluations * step
        wait = (instant - datetime.now(UTC)).total_seconds() + 0.05
        if wait > 0:
            time.sleep(wait)

    def rows(self) -> list[dict[str, Any]]:
        return self.operator.evaluations(self.namespace, self.name)

    def after_evaluations(self, count: int) -> list[dict[str, Any]]:
        """Wait for ``count`` more live evaluations; return the history (act right after)."""
        wanted = self.seen + count
        rows = wait_rows(
            self.operator,
            self.namespace,
            self.name,
            lambda rows: len(rows) >= wanted,
            timeout=count * INTERVAL + 20,
        )
        self.seen = len(rows)
        return rows


def _when(row: dict[str, Any]) -> datetime:
    moment = datetime.fromisoformat(str(row["started_at"]))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _pairs(
    live: list[dict[str, Any]], replay: dict[str, Any], until: datetime
) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
    """Pair the live evaluations of ``replay``'s period (before ``until``), in order, with the
    replayed ones from the one nearest the first; None where no replayed evaluation is left or
    it is one interval away or more.

    Creation times are kept to the second: an evaluation within a revision's creation second
    belongs to the rollout before it (live, no later one began here before the second's end).
    The last rollout's end is the backtest's now, also kept to the second: a live evaluation
    within that second is still the last rollout's (``until``, earlier, bounds it), as its
    replayed instant is the replay's.
    """
    second = timedelta(seconds=1)
    start = parse_time(replay["startedAt"]) + second
    end = parse_time(replay["endedAt"]) + second
    rows = [row for row in live if start <= _when(row) < min(end, until)]
    steps = replay["evaluations"]
    if not rows or not steps:
        return [(row, None) for row in rows]

    def gap(step: dict[str, Any], row: dict[str, Any]) -> float:
        return abs((parse_time(step["at"]) - _when(row)).total_seconds())

    first = min(range(len(steps)), key=lambda j: gap(steps[j], rows[0]))
    pairs: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
    for i, row in enumerate(rows):
        j = first + i
        near = steps[j] if j < len(steps) and gap(steps[j], row) < INTERVAL else None
        pairs.append((row, near))
    return pairs


def _table(name: str, result: dict[str, Any], live: list[dict[str, Any]], until: datetime) -> str:
    lines = [
        f"{name}: revision  live evaluation       replayed at            live          replay"
        "        metrics live, replayed"
    ]
    for replay in result["rollouts"]:
        for row, step in _pairs(live, replay, until):
            at = step["at"] if step else "-"
            paused = (
                " paused" if row["paused"] else "",
                " paused" if step and step.get("paused") else "",
            )
            outcome = step["outcome"] if step else "-"
            # Each metric's verdict, in the spec's order: P(ass), F(ail), I(nconclusive), E(rror).
            metrics = (
                "".join(m["verdict"][0] for m in row["metric_results"]),
                "".join(m["verdict"][0] for m in step["metrics"]) if step else "-",
            )
            lines.append(
                f"{'':{len(name)}}  {replay['revision']:<8}  {_when(row):%H:%M:%S.%f}"[:-3]
                + f"  {at:<22} {row['outcome'] + paused[0]:<13} {outcome + paused[1]:<13}"
                + f" {metrics[0]:<7} {metrics[1]}"
            )
    return "\n".join(lines)


def _assert_replay_is_live(
    result: dict[str, Any],
    live: list[dict[str, Any]],
    until: datetime,
    sequential: frozenset[str] = frozenset(),
) -> None:
    """Each live evaluation's verdict, and each of its metrics', is the replayed one's, within
    one interval; each live pause is where the replay would have paused.

    The rollout during which the analysis was created is left out: live, its evaluations kept
    the analysis's own phase, not one set by the rollout's start (docs/backtest.md).

    A ``sequential`` metric counts the whole steps since the rollout began, less a settle of
    one interval: a live evaluation that started before its replayed instant (the revision was
    created a second or two after the live evaluation before it, the controller being slow)
    counted one step fewer than the replay, so its verdict is the replay's one evaluation
    earlier (docs/backtest.md#which-instants-and-which-queries).
    """
    created = _when(live[0])
    compared = [r for r in result["rollouts"] if parse_time(r["startedAt"]) > created]
    assert compared, result["rollouts"]
    matched = 0
    for replay in compared:
        pairs = _pairs(live, replay, until)
        assert all(step is not None for _, step in pairs), (replay["revision"], pairs)
        for i, (row, step) in enumerate(pairs):
            assert step is not None
            assert row["outcome"] == step["outcome"], (replay["revision"], row, step)
            # Each metric's verdict too (compare and sequential among them).
            verdicts = {m["name"]: m["verdict"] for m in row["metric_results"]}
            replayed = {m["name"]: m["verdict"] for m in step["metrics"]}
            early = _when(row) < parse_time(step["at"])
            for name in sequential & set(replayed) if early else ():
                before = pairs[i - 1][1] if i > 0 else None
                earlier = {m["name"]: m["verdict"] for m in before["metrics"]} if before else {}
                replayed[name] = earlier.get(name, "Inconclusive")
            assert verdicts == replayed, (replay["revision"], row, step)
        live_pause = next((i for i, (row, _) in enumerate(pairs) if row["paused"]), None)
        if live_pause is not None:
            # The first pause: the same evaluation of the same rollout.
            step = pairs[live_pause][1]
            assert step is not None and step.get("paused"), (replay["revision"], step)
            assert replay["wouldPauseAt"] == step["at"]
        matched += len(pairs)
    # Every live evaluation since then fell in a replayed rollout.
    since = parse_time(compared[0]["startedAt"]) + timedelta(seconds=1)
    assert matched == len([row for row in live if since <= _when(row) < until])


def _backtest_command(
    cluster: RealCluster,
    prometheus: str,
    target: str,
    spec: dict[str, Any],
    workdir: Path,
    *args: str,
) -> subprocess.CompletedProcess[str]:
    draft = workdir / f"{target.replace('/', '-')}-{len(list(workdir.iterdir()))}.yaml"
    draft.write_text(yaml.safe_dump(spec))
    env = with_defaults(
        {**os.environ, "KUBECONFIG": str(cluster.kubeconfig), "SENTINEL_PROMETHEUS_URL": prometheus}
    )
    return subprocess.run(
        [sys.executable, str(MANAGE), "backtest", target, "--spec", str(draft), *args],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_the_backtest_replays_the_live_verdicts_of_a_deployment_and_a_statefulset(
    real_cluster: RealCluster,
    real_client: kube.KubeClient,
    real_namespace: str,
    pods: PodServer,
    pod_prometheus: PrometheusServer,
    real_operator: OperatorProcess,
    tmp_path: Path,
) -> None:
    cluster, client, namespace = real_cluster, real_client, real_namespace
    started = time.monotonic()
    pods.behave(GOOD, image=IMAGE.format("web", 1))
    pods.behave(Behaviour(latency=0.1, rps=RPS, error_rate=0.03), image=IMAGE.format("web", 2))
    pods.behave(Behaviour(latency=0.5, rps=RPS), image=IMAGE.format("web", 3))
    pods.behave(Behaviour(latency=0.1, rps=RPS, error_rate=0.5), image=IMAGE.format("web", 4))
    # db's latencies are exact (no spread, sums exact in binary): the compare's ranks never
    # depend on when in a second the samples were read.
    pods.behave(DB_GOOD, image=IMAGE.format("db", 1))
    pods.behave(DB_GOOD, image=IMAGE.format("db", 2))
    pods.behave(
        Behaviour(latency=0.5, spread=0.0, rps=RPS, error_rate=0.5), image=IMAGE.format("db", 3)
    )

    kubectl_apply(
        cluster,
        kwok_deployment("web", namespace, IMAGE.format("web", 1), pods.port, replicas=REPLICAS),
        _statefulset(namespace, "1", pods.port),
    )
    for workload in ("deployment/web", "statefulset/db"):
        cluster.kubectl("rollout", "status", "-n", namespace, workload, "--timeout=90s")
    pod_prometheus.wait_for(
        f'count(up{{namespace="{namespace}"}} == 1)', lambda v: v == [2 * REPLICAS], timeout=30
    )
    pod_prometheus.wait_for(_slowest(namespace, "db"), lambda v: len(v) == 1, timeout=30)

    web_spec, db_spec = _web_spec(namespace, 0.05), _db_spec(namespace)
    kubectl_apply(cluster, rollout_analysis("web-guard", namespace, web_spec))
    # db's analysis half an interval later, at the start of a second: the two stories then act
    # at different moments, and db's changes (an API request, faster than kubectl) are made
    # within the second its evaluation started in. A later second would put the replayed
    # instants after the live evaluations, and a sequential metric would count one step more
    # in the replay than live (docs/backtest.md#which-instants-and-which-queries).
    time.sleep(INTERVAL / 2 - time.time() % 1)
    kubectl_apply(cluster, rollout_analysis("db-guard", namespace, db_spec))
    web, db = (
        Live(real_operator, client, namespace, "web-guard", ("Deployment", "web")),
        Live(real_operator, client, namespace, "db-guard", ("StatefulSet", "db")),
    )

    def after(
        live: Live, evaluations: int, *commands: tuple[str, ...] | Callable[[], object]
    ) -> None:
        """Right after ``evaluations`` more live evaluations, make the ``commands`` (kubectl's
        arguments, or a function)."""
        before = len(live.revisions())
        rows = live.after_evaluations(evaluations)
        if not commands:
            return
        live.before_next_rollout(rows)
        for command in commands:
            if callable(command):
                command()
            else:
                cluster.kubectl("-n", namespace, *command)
        live.rollout_start = live.new_revision_created(before)

    def set_image(kind: str, name: str, version: int) -> tuple[str, ...]:
        return ("set", "image", f"{kind}/{name}", f"app={IMAGE.format(name, version)}")

    def set_db_image(version: int) -> Callable[[], object]:
        """``kubectl set image statefulset/db`` as one API request (no kubectl to start)."""
        container = {"name": "app", "image": IMAGE.format("db", version)}
        return lambda: client.request(
            "PATCH",
            kube.workload_path("StatefulSet", namespace, "db"),
            body={"spec": {"template": {"spec": {"containers": [container]}}}},
            content_type="application/strategic-merge-patch+json",
        )

    def web_story() -> datetime:
        after(web, 2, set_image("deployment", "web", 2))  # good
        after(web, 2, set_image("deployment", "web", 3))  # the latency regression
        # Paused at its second evaluation; a person fixes it forward: the new template,
        # then resume (the ReplicaSet is created then).
        after(web, 2, set_image("deployment", "web", 4), ("rollout", "resume", "deployment/web"))
        after(web, 2)  # the error-rate regression, paused
        undone = datetime.now(UTC)
        cluster.kubectl("-n", namespace, "rollout", "resume", "deployment/web")
        cluster.kubectl("-n", namespace, "rollout", "undo", "deployment/web", "--to-revision=2")
        return undone

    def db_story() -> None:
        after(db, 2, set_db_image(2))  # good
        # Three evaluations of the good one: the third is the first with minSamples 3 of the
        # new pod's samples in compare's lookback (30 s at 10 s); web's story stays the longer.
        after(db, 3, set_db_image(3))  # the latency and error regression
        # Paused at its second evaluation by the threshold; at the third, compare and
        # sequential fail too (compare's third sample of the new pod).
        after(db, 3)
        # The replay of this last rollout runs until the backtest's now: not before the
        # replayed instant of its last live evaluation.
        db.before_next_rollout(db.rows())

    # The two stories at once, each change right after its own analysis's evaluation.
    with ThreadPoolExecutor(max_workers=1) as pool:
        db_done = pool.submit(db_story)
        undone = web_story()
        db_done.result()
    for name in ("web-guard", "db-guard"):
        assert condition(get_analysis(client, namespace, name), "RolloutPaused")["status"] == "True"
    live_seconds = time.monotonic() - started

    # The same specs, created afterwards: drafts of analyses that never existed.
    replayed = time.monotonic()
    # db's live history up to now; its replay's last rollout runs until the backtest's now.
    db_live, until = db.rows(), datetime.now(UTC)
    providers = Providers.single(PrometheusClient(pod_prometheus.url))
    # A test's Prometheus serves nothing live: the backtest's share of it may be larger.
    replayer = Backtest(client, Replayer(providers, queries_per_second=100))
    # The two backtests at once: web's through the command, db's in process.
    with ThreadPoolExecutor(max_workers=1) as pool:
        db_replay = pool.submit(lambda: replayer.run(namespace, "db-replay", spec=db_spec))
        ran = _backtest_command(
            cluster, pod_prometheus.url, f"{namespace}/web-replay", web_spec, tmp_path, "--json"
        )
        db_result = db_replay.result().to_dict()
    print(f"\n$ manage.py backtest {namespace}/web-replay --spec web.yaml --json\n{ran.stdout}")
    print(f"exit status {ran.returncode}")
    assert ran.returncode == 1, ran.stderr
    web_result = json.loads(ran.stdout)
    replay_seconds = time.monotonic() - replayed
    web_live = web.rows()
    print(f"\n{_table('web', web_result, web_live, undone)}")
    print(_table("db", db_result, db_live, until))

    # web: revisions 1 (before the analysis), 2 good, 3 latency, 4 errors rolled back.
    first, good, slow, failing = web_result["rollouts"]
    assert [r["revision"] for r in web_result["rollouts"]] == [1, 2, 3, 4]
    assert [r["rolledBack"] for r in web_result["rollouts"]] == [False, False, False, True]
    assert first["wouldPauseAt"] is None and good["wouldPauseAt"] is None
    assert (slow["evaluation"], slow["metric"]) == (FAILURE_LIMIT, "latency")
    assert (failing["evaluation"], failing["metric"]) == (FAILURE_LIMIT, "error-ratio")
    assert web_result["summary"]["caught"][0]["revision"] == 4
    _assert_replay_is_live(web_result, web_live, undone)
    # db: revisions 1 (before the analysis), 2 good, 3 latency.
    assert [r["wouldPauseAt"] is None for r in db_result["rollouts"]] == [True, True, False]
    assert db_result["rollouts"][2]["evaluation"] == FAILURE_LIMIT
    # compare and sequential failed live on db 3, each against db-0's first revision.
    failed = {m["name"] for row in db_live for m in row["metric_results"] if m["verdict"] == "Fail"}
    assert failed == {"latency", "new-vs-old", "errors"}
    since = parse_time(db_result["rollouts"][2]["startedAt"]) + timedelta(seconds=1)
    comparisons = [
        json.loads(m["comparison"])
        for row in db_live
        if _when(row) >= since
        for m in row["metric_results"]
        if m["name"] == "new-vs-old" and m["comparison"] not in ("", "{}")
    ]
    first_revision = db_result["rollouts"][0]["hash"]
    assert comparisons and {tuple(c["oldHashes"]) for c in comparisons} == {(first_revision,)}
    _assert_replay_is_live(db_result, db_live, until, sequential=frozenset({"errors"}))

    # A tighter error threshold: good version 2 (3 % errors) would have been paused too.
    tighter = _backtest_command(
        cluster, pod_prometheus.url, f"{namespace}/web-replay", _web_spec(namespace, 0.01), tmp_path
    )
    print(f"$ manage.py backtest {namespace}/web-replay --spec tighter.yaml\n{tighter.stdout}")
    print(f"exit status {tighter.returncode}")
    assert tighter.returncode == 1, tighter.stderr
    assert (
        f"revision 2: paused Deployment web: {FAILURE_LIMIT} consecutive failed" in tighter.stdout
    )
    print(f"live {live_seconds:.1f} s, replays {replay_seconds:.1f} s")
