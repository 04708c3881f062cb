"""What the demo applies to devcluster besides the CRD: a ``checkout`` Deployment, the analysis.

``demo.runner`` applies them with the real kubectl, built with the kit's builders
(``testkit.manifests``). The analysis is docs/resource.md's, with the interval and the query's
rate() window as the demo's settings choose (shorter than production's, so that the regression shows
within a few minutes), and a second metric beside the fixed one (docs/resource.md#baselines): the
same p99 judged against its own value one rate window earlier (``maxIncrease`` +
``baseline.offset``), guarded by a minimum request count (``minSamples``). It fails as soon as the
p99 climbs half again above where it was, while the fixed metric waits for 0.25 s. A third metric
compares the new pods' mean latency with the old pods' (``compare``): on the real control plane
after ``kubectl set image``; on devcluster, which has no ReplicaSets, it says why it cannot.
"""

from __future__ import annotations

from sentinel_core.spec import parse_duration
from testkit.manifests import analysis_manifest, deployment_manifest, to_yaml

NAMESPACE = "default"
NAME = "checkout"
IMAGE = "registry.example.com/shop/checkout:2.4.0"
# What the banner suggests rolling out on the real control plane, where it makes a ReplicaSet.
NEXT_IMAGE = "registry.example.com/shop/checkout:2.5.0"
FAILURE_LIMIT = 3
MAX_VALUE = 0.25
METRIC = "p99-latency"
# The baseline-relative metric: at most +50 % over the p99 one rate window earlier, judged only
# with at least MIN_REQUESTS requests in the window.
RELATIVE_METRIC = "p99-vs-before"
MAX_INCREASE_PERCENT = 50
MIN_REQUESTS = 100
# New pods against old pods: the mean latency per ReplicaSet hash, at most 10 % worse, judged
# over COMPARE_STEPS evaluations' worth of samples.
COMPARE_METRIC = "latency-vs-old"
COMPARE_MAX_EFFECT = 10
COMPARE_STEPS = 12
# The per-pod histogram the app feeds with the ReplicaSets' hashes (demo.app).
POD_HISTOGRAM = "checkout_pod_request_duration_seconds"


def query(rate_window: str) -> str:
    """Return the p99 latency query of docs/resource.md over ``rate_window``."""
    return (
        "histogram_quantile(0.99, rate(http_request_duration_seconds_bucket"
        f'{{app="{NAME}"}}[{rate_window}]))'
    )


def workload(*, interval: str, rate_window: str) -> str:
    """Return the Deployment and the RolloutAnalysis as one multi-document YAML."""
    deployment = deployment_manifest(
        NAME, NAMESPACE, IMAGE, replicas=3, container=NAME, ports=(8080,)
    )
    metric = {"name": METRIC, "query": query(rate_window), "maxValue": MAX_VALUE}
    analysis = analysis_manifest(
        NAME,
        NAMESPACE,
        target=NAME,
        metrics=[metric, relative_metric(rate_window), compare_metric(interval, rate_window)],
        interval=interval,
        failure_limit=FAILURE_LIMIT,
    )
    return to_yaml(deployment, analysis)


def compare_metric(interval: str, rate_window: str) -> dict[str, object]:
    """Return the new pods' mean latency against the old pods' (a ``compare`` metric)."""
    by = "sum by (pod_template_hash)"
    selector = f'{{app="{NAME}"}}[{rate_window}]'
    lookback = f"{round(parse_duration(interval) * COMPARE_STEPS)}s"
    return {
        "name": COMPARE_METRIC,
        "query": (
            f"{by} (rate({POD_HISTOGRAM}_sum{selector})) / "
            f"{by} (rate({POD_HISTOGRAM}_count{selector}))"
        ),
        "compare": {
            "maxEffect": {"percent": COMPARE_MAX_EFFECT},
            "lookback": lookback,
            "minSamples": COMPARE_STEPS - 2,
        },
    }


def relative_metric(rate_window: str) -> dict[str, object]:
    """Return the p99 judged against its own value ``rate_window`` earlier, with a guard."""
    return {
        "name": RELATIVE_METRIC,
        "query": query(rate_window),
        "maxIncrease": {"percent": MAX_INCREASE_PERCENT},
        "baseline": {"offset": rate_window},
        "minSamples": {
            "query": (
                f'sum(increase(http_request_duration_seconds_count{{app="{NAME}"}}[{rate_window}]))'
            ),
            "min": MIN_REQUESTS,
        },
    }
