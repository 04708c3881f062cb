"""Build the POST body of the admin's analysis form, as a browser would send it; post it; read
back what it wrote to the cluster.

The admin's form tests (thresholds, compare, sequential) share these: ``change_form`` for the
body, ``with_fields`` for one inline row's other columns, ``post_add`` for the add form with
one metric, ``cluster_analysis`` for the resource the cluster then holds.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from django.http import HttpResponse
from django.test import Client
from django.urls import reverse

from analyses.models import Analysis
from testkit.devcluster import DevCluster


def change_form(
    analysis: Analysis | None,
    *,
    namespace: str = "",
    name: str = "",
    target: str = "checkout",
    interval: str = "30s",
    failure_limit: int | str = 3,
    dry_run: bool = False,
    metrics: Sequence[tuple[str, str, float]] = (("p99-latency", "up", 0.25),),
) -> dict[str, Any]:
    """Return the form data; existing metric rows are reused in order, extra ones are added."""
    existing = list(analysis.metrics.all()) if analysis is not None else []
    data: dict[str, Any] = {
        "target_name": target,
        "interval": interval,
        "failure_limit": str(failure_limit),
        "metrics-TOTAL_FORMS": str(max(len(metrics), len(existing))),
        "metrics-INITIAL_FORMS": str(len(existing)),
        "metrics-MIN_NUM_FORMS": "1",
        "metrics-MAX_NUM_FORMS": "1000",
        "_save": "Save",
    }
    if analysis is None:
        data.update(namespace=namespace, name=name)
    else:
        data["seen_generation"] = str(analysis.generation)
    if dry_run:
        data["dry_run"] = "on"
    for index in range(max(len(metrics), len(existing))):
        prefix = f"metrics-{index}"
        if index < len(existing):
            data[f"{prefix}-id"] = str(existing[index].pk)
            data[f"{prefix}-analysis"] = str(analysis.pk if analysis else "")
        if index < len(metrics):
            metric_name, query, max_value = metrics[index]
            data.update(
                {
                    f"{prefix}-name": metric_name,
                    f"{prefix}-query": query,
                    f"{prefix}-max_value": str(max_value),
                }
            )
        else:
            # An existing row beyond the wanted metrics: keep its values, tick delete.
            metric = existing[index]
            data.update(
                {
                    f"{prefix}-name": metric.name,
                    f"{prefix}-query": metric.query,
                    f"{prefix}-max_value": ""
                    if metric.max_value is None
                    else str(metric.max_value),
                    f"{prefix}-DELETE": "on",
                }
            )
    return data


def with_fields(data: dict[str, Any], index: int = 0, **fields: str) -> dict[str, Any]:
    """Return ``data`` with inline row ``index``'s other columns set (the rest left empty)."""
    prefix = f"metrics-{index}"
    return {**data, **{f"{prefix}-{field}": value for field, value in fields.items()}}


def post_add(
    client: Client,
    into: str,
    metric: tuple[str, str, float],
    analysis: dict[str, str] | None = None,
    **fields: str,
) -> HttpResponse:
    """Post the add form: analysis checkout in ``into`` with the ``analysis`` fields set, one
    ``metric`` with ``fields`` set."""
    data = change_form(None, namespace=into, name="checkout", metrics=[metric])
    data = {**with_fields(data, **fields), **(analysis or {})}
    return client.post(reverse("admin:analyses_analysis_add"), data)


def cluster_analysis(cluster: DevCluster, namespace: str, name: str) -> dict[str, Any]:
    """Return the RolloutAnalysis ``namespace/name`` as the cluster holds it."""
    result = cluster.kubectl("get", "rolloutanalysis", name, "-n", namespace, "-o", "json")
    return dict(json.loads(result.stdout))
