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
        f"   Prometheus:  {prometheus_url}/graph",
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
        *_real_cluster_hints(settings),
        "",
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
        + (
            "after `kubectl set image` below."
            if settings.cluster == REALCLUSTER
            else "devcluster has no ReplicaSets, so it"
        ),
        (
            " Ctrl-C stops everything."
            if settings.cluster == REALCLUSTER
            else " stays Inconclusive/NoComparison (make demo CLUSTER=real shows it). Ctrl-C "
            "stops everything."
        ),
        "=" * 72,
        "",
    ]
    return "\n".join(lines)


def _real_cluster_hints(settings: DemoSettings) -> list[str]:
    """Return the lines only the real control plane answers: it has a controller manager."""
    if settings.cluster != REALCLUSTER:
        return []
    return [
        "   kubectl get rs,pods                             # real ReplicaSets; Pending pods "
        "(no kubelet)",
        f"   kubectl set image deployment/checkout {manifests.NAME}={manifests.NEXT_IMAGE}",
        "                                                   # while paused: no new ReplicaSet",
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
