"""The text the demo prints for a person: the banner once everything is up, and the hints.

``demo.runner`` prints ``banner`` after the web UI answers and ``hint`` beside the status
log's lines (``demo.status``) when the Deployment gets paused or resumed.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from demo import manifests
from demo.settings import REALCLUSTER, DemoSettings
from demo.status import Snapshot


def banner(
    settings: DemoSettings,
    *,
    elapsed: str,
    password: str,
    kubeconfig: Path,
    kubectl_dir: Path | None,
    prometheus_url: str,
    cluster: str,
) -> str:
    """Return the banner: where the UI is, admin's password, commands to paste, the story.

    ``kubectl_dir`` is the directory of the kubectl the demo uses when it is not on the user's
    PATH (the venv's ``.venv/bin``): the banner prints the ``export PATH`` line for it.
    ``cluster`` says which cluster serves and where.
    """
    ui = f"http://127.0.0.1:{settings.web_port}"
    shell = [f"   export KUBECONFIG={shlex.quote(str(kubeconfig))}"]
    if kubectl_dir is not None:
        shell.append(f'   export PATH="{kubectl_dir}:$PATH"')
    lines = [
        "",
        "=" * 72,
        f" Rollout Sentinel demo is up ({elapsed} after start).",
        "",
        f"   Web UI:      {ui}/admin/",
        f"                user admin, password {password}",
        f"   REST API:    {ui}/api/v1/analyses/",
        (
            f"   Prometheus:  {prometheus_url}/api/v1/targets (3.x, built without its web UI)"
            if settings.cluster == REALCLUSTER
            else f"   Prometheus:  {prometheus_url}/graph"
        ),
        "   Providers:   this Prometheus is provider `default`; Thanos, Mimir, Cortex or",
        "                VictoriaMetrics with auth: SENTINEL_PROVIDERS_FILE (docs/operations.md)",
        f"   Cluster:     {cluster}",
        f"   Logs:        {settings.work_dir}/*.log",
        "",
        " Try, in another terminal:",
        *shell,
        "   kubectl get ra -w",
        "   kubectl describe ra checkout",
        "   kubectl rollout resume deployment/checkout      # after the operator pauses it",
        *_real_cluster_hints(settings, kubeconfig),
        "",
        *(_real_story(settings) if settings.cluster == REALCLUSTER else _story(settings)),
        "=" * 72,
        "",
    ]
    return "\n".join(lines)


def _story(settings: DemoSettings) -> list[str]:
    """Return the devcluster story: the service's p99 regresses after a healthy while."""
    return [
        f" Story: checkout is healthy (p99 ≈ 0.09 s) for {settings.regression_after:.0f} s, "
        "then regresses (p99 ≈ 0.4 s,",
        f" threshold {manifests.MAX_VALUE}). The analysis runs every {settings.interval} over a "
        f"{settings.rate_window} rate window (30s and 5m",
        " are usual; shortened so the story shows in minutes) and pauses the Deployment",
        f" after {manifests.FAILURE_LIMIT} consecutive failures. Beside the fixed threshold, "
        f"{manifests.RELATIVE_METRIC}",
        f" fails when the p99 is {manifests.MAX_INCREASE_PERCENT} % above its value "
        f"{settings.rate_window} earlier (its baseline, drawn",
        f" in its graph), given at least {manifests.MIN_REQUESTS} requests. "
        f"{manifests.COMPARE_METRIC} compares the new pods'",
        f" mean latency with the old pods' (at most +{manifests.COMPARE_MAX_EFFECT} %): "
        "devcluster has no ReplicaSets, so it",
        " stays Inconclusive/NoComparison (make demo CLUSTER=real shows it); so does "
        f"{manifests.SEQUENTIAL_METRIC},",
        " which judges the new pods' error rate against the old pods' sequentially: no "
        "ReplicaSets,",
        " no pods to compare. Ctrl-C stops everything.",
    ]


def _real_story(settings: DemoSettings) -> list[str]:
    """Return the real control plane's story: a release whose pods are slower, paused mid-way."""
    slower = round((manifests.NEXT_POD_LATENCY / manifests.POD_LATENCY - 1) * 100)
    return [
        f" Story: checkout runs {manifests.REAL_REPLICAS} pods on a simulated node (kwok: no "
        "containers); the demo",
        " serves each pod's /metrics at the pod's own IP and Prometheus 3 discovers them",
        f" through the API server. {settings.regression_after:.0f} s from now the demo rolls out "
        f"{manifests.NEXT_IMAGE.rsplit(':', 1)[1]}, whose pods",
        f" answer {slower} % slower; the rolling update makes one new pod every "
        f"{manifests.MIN_READY_SECONDS} s. {manifests.COMPARE_METRIC}",
        f" compares the new pods' mean latency with the old pods' (at most "
        f"+{manifests.COMPARE_MAX_EFFECT} %, every {settings.interval}),",
        f" and after {manifests.FAILURE_LIMIT} failures the operator pauses the rollout mid-way: "
        "old and new",
        " ReplicaSets keep their sizes while paused. "
        f"{manifests.SEQUENTIAL_METRIC} judges the new pods' error",
        f" rate against the old pods' step by step (at most +{manifests.SEQUENTIAL_MAX_INCREASE} "
        f"%): every pod fails {manifests.POD_ERROR_RATE * 100:g} % of its",
        " requests, so it stays Pass; the UI draws its evidence and both sides' rates. Ctrl-C",
        " stops everything.",
    ]


def _real_cluster_hints(settings: DemoSettings, kubeconfig: Path) -> list[str]:
    """Return the lines only the real control plane answers: its pods roll over."""
    if settings.cluster != REALCLUSTER:
        return []
    return [
        "   # watch the rolling update, and the pause holding it mid-way:",
        f"   kubectl --kubeconfig {shlex.quote(str(kubeconfig))} get rs,pods -w",
    ]


def hint(previous: Snapshot | None, current: Snapshot) -> str | None:
    """Return what to try next when the Deployment was just paused or resumed, else None."""
    if current.paused and (previous is None or not previous.paused):
        return (
            "       → the operator paused deployment/checkout. Resume it with\n"
            "         `kubectl rollout resume deployment/checkout` or the UI's Resume action;\n"
            "         the regression is still there, so it pauses again after "
            f"{manifests.FAILURE_LIMIT} more failures."
        )
    if previous is not None and previous.paused and not current.paused:
        return "       → deployment/checkout was resumed; failures start from 0 again."
    return None
