"""``POST …/backtest/`` and its job on the real control plane (docs/backtest.md).

The Deployment's past is ``tests.backtest.history``'s. A viewer asks for a backtest (202 and
the job's URL; queued); the operator's pump claims the job and its task runs it (here in this
process through the pump's ``enqueue`` seam, with a replay against the Prometheus holding that
past); the job's JSON then carries every rollout and the summary. A draft needs the right to
change the analysis; a draft using a provider the namespace may not use is a 400; a queued job
is cancelled at once by DELETE; someone who may not view the analysis gets 404.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

import pytest
from django.utils import timezone

from accounts import tokens
from analyses import mirror
from analyses.models import BacktestJob
from sentinel_cluster import kube
from sentinel_operator.backtest import Backtest, Replayer
from sentinel_operator.backtest_jobs import BacktestPump, run_job
from sentinel_operator.prometheus import PrometheusClient
from sentinel_operator.providers import Providers
from testkit.clusters import Cluster
from testkit.namespaces import fresh_namespace
from testkit.waiting import wait_until
from tests.api.client import Api, MakeApi, make_user
from tests.backtest.history import QUERY, History, make_history

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.clusters("real")]


@dataclass(frozen=True)
class Past:
    """The Deployment's past and its analysis, mirrored; a viewer; the backtest's URL."""

    history: History
    viewer: Api
    base: str


@pytest.fixture(scope="module")
def history(
    api_cluster: Cluster, cluster_client: kube.KubeClient, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[History]:
    """The Deployment's past, made once for the module's tests on a worker (45 s of changes):
    they only read it, each with its own database and jobs."""
    with fresh_namespace(cluster_client, "api") as namespace:
        workdir = tmp_path_factory.mktemp("backtest") / "prometheus"
        yield make_history(api_cluster, cluster_client, namespace, workdir)


@pytest.fixture
def past(make_api: MakeApi, history: History, cluster_kind: str) -> Past:
    mirror.upsert_from_resource(history.created)
    namespace = history.created["metadata"]["namespace"]
    base = f"analyses/{namespace}/web-guard/backtest/"
    return Past(history, make_api("view_analysis"), base)


def test_backtest_job_over_rest(
    past: Past, make_api: MakeApi, cluster_client: kube.KubeClient
) -> None:
    history, viewer, base = past.history, past.viewer, past.base

    asked = viewer.post(base, json={"rollouts": 5, "maxDuration": "1h"})
    assert asked.status_code == 202, asked.text
    job = asked.json()
    print(f"POST {base} -> {asked.status_code}\n{json.dumps(job, indent=2)}")
    assert job["state"] == "queued" and job["progress"] == 0.0 and job["rollouts"] == []
    assert asked.headers["Location"] == job["url"]

    # A draft is an edit: a viewer may not; one who may change it may, within the allow-list.
    draft = {
        **history.analysis["spec"],
        "metrics": [{"name": "l", "query": QUERY, "maxValue": 0.05}],
    }
    assert viewer.post(base, json={"spec": draft}).status_code == 403
    editor = make_api("view_analysis", "change_analysis")
    elsewhere = {**draft, "metrics": [{**draft["metrics"][0], "provider": "thanos"}]}
    refused = editor.post(base, json={"spec": elsewhere})
    assert refused.status_code == 400 and "spec.metrics[0].provider" in refused.text
    queued = editor.post(base, json={"spec": draft})
    assert queued.status_code == 202
    cancelled = editor.delete(queued.json()["url"])
    assert cancelled.json()["state"] == "cancelled"
    assert viewer.post(base, json={"rollouts": 51}).status_code == 400
    # No right in the namespace: the analysis is not even seen.
    stranger = make_user("view_analysis", namespaces=())
    issued = tokens.issue(stranger, now=timezone.now())
    outsider = Api(viewer.base, {"Authorization": f"Token {issued.plaintext}"})
    assert outsider.post(base, json={}).status_code == 404

    with history.prometheus as prometheus:
        backtest = Backtest(
            cluster_client, Replayer(Providers.single(PrometheusClient(prometheus.url)))
        )
        ran: list[str] = []

        def enqueue(pk: int, claim: datetime) -> None:
            ran.append(run_job(pk, claim.isoformat(), backtest=backtest))

        pump = BacktestPump(is_leader=lambda: True, enqueue=enqueue)
        assert pump.pump_due() == 1
    assert ran == ["succeeded"]
    done = viewer.get(job["url"]).json()
    print(f"GET {job['url']}\n{json.dumps(done, indent=2)}")
    assert done["state"] == "succeeded" and done["progress"] == 1.0
    assert [r["revision"] for r in done["rollouts"]] == [1, 2, 4]
    assert [r["rolledBack"] for r in done["rollouts"]] == [False, True, False]
    bad = done["rollouts"][1]
    assert bad["evaluation"] == 2 and bad["metric"] == "latency" and bad["value"] == "0.5"
    assert bad["message"].startswith("paused Deployment web: 2 consecutive failed evaluations")
    assert done["summary"]["caught"][0]["revision"] == 2
    assert done["summary"]["pausedNotRolledBack"] == []
    # Nothing left to queue: the cancelled draft stays cancelled.
    assert BacktestPump(is_leader=lambda: True, enqueue=enqueue).pump_due() == 0
    assert BacktestJob.objects.filter(state="cancelled").count() == 1


def _running(url: str, api: Api) -> bool:
    return api.get(url).json()["state"] == "running"


def test_a_running_job_is_cancelled_between_evaluations(
    past: Past, cluster_client: kube.KubeClient
) -> None:
    history, viewer = past.history, past.viewer
    job = viewer.post(past.base, json={}).json()
    outcome: list[str] = []
    with history.prometheus as prometheus:
        # Two queries a second: the job runs for seconds, long enough to be cancelled.
        slow = Replayer(Providers.single(PrometheusClient(prometheus.url)), queries_per_second=2)
        backtest = Backtest(cluster_client, slow)

        def enqueue(pk: int, claim: datetime) -> None:
            runner = threading.Thread(
                target=lambda: outcome.append(run_job(pk, claim.isoformat(), backtest=backtest))
            )
            runner.start()
            wait_until(lambda: _running(job["url"], viewer), timeout=10)
            assert viewer.delete(job["url"]).json()["state"] == "running"
            runner.join(timeout=30)

        assert BacktestPump(is_leader=lambda: True, enqueue=enqueue).pump_due() == 1
    assert outcome == ["cancelled"]
    cancelled = viewer.get(job["url"]).json()
    assert cancelled["state"] == "cancelled" and cancelled["rollouts"] == []
    assert 0 < cancelled["progress"] < 1
