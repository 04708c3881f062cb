"""What the demo applies besides the CRD: a ``checkout`` Deployment and the analysis.

``demo.runner`` applies them with the real kubectl, built with the kit's builders
(``testkit.manifests``). The analysis is docs/resource.md's, with the interval and the query's
rate() window as the demo's settings choose (shorter than production's, so that the regression shows
within a few minutes), and a second metric beside the fixed one (docs/resource.md#baselines): the
same p99 judged against its own value one rate window earlier (``maxIncrease`` +
``baseline.offset``), guarded by a minimum request count (``minSamples``). It fails as soon as the
p99 climbs half again above where it was, while the fixed metric waits for 0.25 s. A third metric
compares the new pods' mean latency with the old pods' (``compare``), each pod's series as
Prometheus's Kubernetes discovery labels it: on the real control plane (``pods_port``), whose
pods run on kwok's simulated node and are served by the demo (``testkit.pod_server``), the
Deployment rolls one pod per ``MIN_READY_SECONDS`` so that a pause lands mid-rollout; on
devcluster, which has no ReplicaSets, it says why it cannot compare. A fourth metric judges the
pods' error rates sequentially (``sequential``, docs/analysis.md): every pod fails
``POD_ERROR_RATE`` of its requests, old and new alike, so it stays Pass (no evidence of harm)
while its evidence and both sides' rates are drawn in the UI; on devcluster it says why it
stays NoComparison, as the third.
"""

from __future__ import annotations

from sentinel_core.spec import parse_duration
from testkit.manifests import analysis_manifest, deployment_manifest, to_yaml
from testkit.pod_server import kwok_deployment

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
# New pods against old pods: each pod's mean latency, the new ReplicaSet's at most 10 % worse
# than the old ones', judged over COMPARE_STEPS evaluations' worth of samples.
COMPARE_METRIC = "latency-vs-old"
COMPARE_MAX_EFFECT = 10
COMPARE_STEPS = 6
# The scrape job of the pods Prometheus discovers (testkit.prometheus.KubernetesPods); the
# app's own series come from the "demo" job.
PODS_JOB = "kubernetes-pods"
APP_JOB = "demo"
# The real control plane's rolling update: one new pod at a time, each counted available only
# MIN_READY_SECONDS after it is Ready, so the rollout of REAL_REPLICAS takes minutes and the
# operator's pause comes while old and new pods both serve.
REAL_REPLICAS = 4
MIN_READY_SECONDS = 30
# The pods' mean latency: NEXT_IMAGE's pods are 60 % slower (the release's regression).
POD_LATENCY = 0.05
NEXT_POD_LATENCY = 0.08
# New pods against old pods on counts: the share of failed requests, the new pods' at most
# SEQUENTIAL_MAX_INCREASE % above the old pods'. The release is slower, not more error-prone:
# both sides fail POD_ERROR_RATE of their requests, so the sequential metric stays Pass (a good
# side of the release is never paused for it).
SEQUENTIAL_METRIC = "errors-vs-old"
SEQUENTIAL_MAX_INCREASE = 10
POD_ERROR_RATE = 0.02


def query(rate_window: str) -> str:
    """Return the p99 latency query of docs/resource.md over ``rate_window`` (the app's)."""
    return (
        "histogram_quantile(0.99, rate(http_request_duration_seconds_bucket"
        f'{{app="{NAME}",job="{APP_JOB}"}}[{rate_window}]))'
    )


def workload(*, interval: str, rate_window: str, pods_port: int | None = None) -> str:
    """Return the Deployment and the RolloutAnalysis as one multi-document YAML.

    With ``pods_port`` (the real control plane) the Deployment's pods run on kwok's node and
    declare that metrics port, and its rolling update moves one pod per ``MIN_READY_SECONDS``.
    """
    if pods_port is None:
        deployment = deployment_manifest(
            NAME, NAMESPACE, IMAGE, replicas=3, container=NAME, ports=(8080,)
        )
    else:
        deployment = kwok_deployment(
            NAME,
            NAMESPACE,
            IMAGE,
            pods_port,
            replicas=REAL_REPLICAS,
            min_ready_seconds=MIN_READY_SECONDS,
            container=NAME,
            one_pod_at_a_time=True,
        )
    metric = {"name": METRIC, "query": query(rate_window), "maxValue": MAX_VALUE}
    analysis = analysis_manifest(
        NAME,
        NAMESPACE,
        target=NAME,
        metrics=[
            metric,
            relative_metric(rate_window),
            compare_metric(interval, rate_window),
            sequential_metric(),
        ],
        interval=interval,
        failure_limit=FAILURE_LIMIT,
    )
    return to_yaml(deployment, analysis)


def compare_metric(interval: str, rate_window: str) -> dict[str, object]:
    """Return each pod's mean latency, new pods against old pods (a ``compare`` metric)."""
    selector = f'{{namespace="{NAMESPACE}",app="{NAME}",job="{PODS_JOB}"}}[{rate_window}]'
    lookback = f"{round(parse_duration(interval) * COMPARE_STEPS)}s"
    return {
        "name": COMPARE_METRIC,
        "query": (
            f"rate(http_request_duration_seconds_sum{selector}) / "
            f"rate(http_request_duration_seconds_count{selector})"
        ),
        "compare": {
            "by": "pod_template_hash",
            "maxEffect": {"percent": COMPARE_MAX_EFFECT},
            "lookback": lookback,
            "minSamples": COMPARE_STEPS - 1,
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
                "sum(increase(http_request_duration_seconds_count"
                f'{{app="{NAME}",job="{APP_JOB}"}}[{rate_window}]))'
            ),
            "min": MIN_REQUESTS,
        },
    }


def sequential_metric() -> dict[str, object]:
    """Return the pods' failed requests against all, new pods against old (``sequential``)."""
    selector = f'namespace="{NAMESPACE}",app="{NAME}",job="{PODS_JOB}"'
    return {
        "name": SEQUENTIAL_METRIC,
        "sequential": {
            "bad": f"http_request_errors_total{{{selector}}}",
            "total": f"http_requests_total{{{selector}}}",
            "maxIncrease": {"percent": SEQUENTIAL_MAX_INCREASE},
        },
    }
