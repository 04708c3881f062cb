"""The sequential kind's step counts against the real Prometheus: exactly the events served.

docs/analysis.md ("What the operator reads"): a step's count is the counter's difference over
the step, from the raw samples, nothing extrapolated. ``testkit.metrics_app``'s pod counters
are known event by event, so the counts the operator reads (``measure_metric``, as the
reconciler calls it, over two consecutive evaluations) must add up to what the pods served
after ``through``: not what they served before it, not twice across the evaluations' shared
boundary, with a pod's counter reset counted from zero and a pod that appears midway from its
first scrape. On
Debian's Prometheus 2.x (range selectors closed on the left) and the built 3.x (open).
"""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime, timedelta

import pytest

from sentinel_core.metric_kinds import Facts
from sentinel_core.metric_kinds.sequential import Step, instant
from sentinel_core.spec import MetricSpec, parse_spec
from sentinel_operator.measuring import measure_metric
from sentinel_operator.prometheus import PrometheusClient
from testkit.fault_proxy import FaultProxy
from testkit.metrics_app import MetricsApp
from testkit.prometheus import PrometheusServer

pytestmark = pytest.mark.server

STEP = 2.0
OLD, NEW = "oldhash", "newhash"


def _metric(case: str) -> MetricSpec:
    selector = f'case="{case}"'
    raw = {
        "name": "errors-vs-old",
        "sequential": {
            "bad": f"sentinel_test_pod_errors_total{{{selector}}}",
            "total": f"sentinel_test_pod_requests_total{{{selector}}}",
            "maxIncrease": {"percent": 20},
        },
    }
    return parse_spec({"target": {"name": "x"}, "metrics": [raw]}).metrics[0]


class Pods:
    """The case's pods on the metrics app, and what each side served since ``counting``."""

    def __init__(self, app: MetricsApp, prometheus: PrometheusServer, case: str) -> None:
        self.app, self.prometheus, self.case = app, prometheus, case
        self.served = {OLD: [0, 0], NEW: [0, 0]}  # side -> [errors, requests]
        self.counting = False

    def serve(self, side: str, pod: str, requests: int, errors: int) -> None:
        self.app.serve_pod(self.case, side, pod, requests, errors)
        if self.counting:
            self.served[side][0] += errors
            self.served[side][1] += requests

    def scraped(self, pods: int) -> None:
        """Wait until Prometheus has scraped every count served so far."""
        requests = f'sum(sentinel_test_pod_requests_total{{case="{self.case}"}})'
        errors = f'sum(sentinel_test_pod_errors_total{{case="{self.case}"}})'
        count = f'count(sentinel_test_pod_requests_total{{case="{self.case}"}})'
        want = self.app_totals()
        self.prometheus.wait_for(count, lambda v: v == [pods], timeout=20)
        self.prometheus.wait_for(requests, lambda v: v == [want[1]], timeout=20)
        self.prometheus.wait_for(errors, lambda v: v == [want[0]], timeout=20)

    def app_totals(self) -> tuple[float, float]:
        """Return the counters' current sums (errors, requests) as the app exposes them."""
        sums = [0.0, 0.0]
        for family in self.app.registry.collect():
            for sample in family.samples:
                if sample.labels.get("case") != self.case or not sample.name.endswith("_total"):
                    continue
                sums[0 if "errors" in sample.name else 1] += sample.value
        return sums[0], sums[1]


def _counted(steps: tuple[Step, ...]) -> dict[str, list[float]]:
    return {
        OLD: [sum(s.old.bad for s in steps), sum(s.old.total for s in steps)],
        NEW: [sum(s.new.bad for s in steps), sum(s.new.total for s in steps)],
    }


def _measure(
    proxy: FaultProxy, metric: MetricSpec, through: str, now: datetime
) -> tuple[Step, ...]:
    facts = Facts(now=now, step=STEP, new_hash=NEW, old_hashes=(OLD,), through=through)
    got = measure_metric(PrometheusClient(proxy.url), metric, facts)
    assert got.error is None, got.message
    assert got.reading is not None
    steps: tuple[Step, ...] = got.reading.steps
    return steps


@pytest.mark.parametrize("flavour", ["debian", "built"])
def test_the_counts_read_add_up_to_the_events_the_pods_served(
    metrics_app: MetricsApp, request: pytest.FixtureRequest, case: str, flavour: str
) -> None:
    prometheus: PrometheusServer = request.getfixturevalue(f"{flavour}_prometheus")
    pods = Pods(metrics_app, prometheus, case)
    draw = random.Random(40)
    # Events before the evidence starts: the boundary samples' values, never counted.
    for pod in ("old-a", "old-b"):
        pods.serve(OLD, pod, 500, 60)
    pods.serve(NEW, "new-a", 40, 2)
    pods.scraped(3)
    start = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=1)
    through = instant(start)
    time.sleep(1.2)
    pods.counting = True
    for burst in range(24):
        for side, pod in ((OLD, "old-a"), (OLD, "old-b"), (NEW, "new-a")):
            requests = draw.randint(0, 30)
            pods.serve(side, pod, requests, draw.randint(0, requests // 5))
        if burst == 8:
            # Everything old-b served is scraped, then its process restarts: from zero.
            pods.scraped(3)
            metrics_app.restart_pod(case, OLD, "old-b")
            pods.serve(OLD, "old-b", 7, 1)
        if burst == 12:
            # A pod that appears midway: counted from its first scrape, as increase counts.
            pods.serve(NEW, "new-b", 0, 0)
            pods.scraped(4)
            pods.serve(NEW, "new-b", 30, 3)
        time.sleep(draw.uniform(0.3, 0.7))
    pods.scraped(4)
    # The first evaluation counts about the first half of the steps, the second the rest.
    middle = start + (datetime.now(UTC) - start) / 2
    time.sleep(STEP + 10.5)  # the last events' step ends and settles

    proxy = FaultProxy(prometheus.url)
    with proxy:
        first = _measure(proxy, _metric(case), through, middle)
        second = _measure(proxy, _metric(case), first[-1].end, datetime.now(UTC))
        # Two requests per evaluation: the raw samples of the bad and of all events.
        assert [r.path for r in proxy.requests] == ["/api/v1/query"] * 4
    assert first and second and first[-1].end < second[0].end
    counted = _counted(first + second)
    print(f"{flavour}: served {pods.served}, counted {counted} in {len(first + second)} steps")
    assert counted == {side: [float(n) for n in pair] for side, pair in pods.served.items()}
