"""The admin's analysis form carries ``spec.notify`` (docs/notifications.md): written to the
cluster, shown again, kept by a save that does not touch it, and checked by the same rules as the
API."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse

from analyses.models import Analysis
from testkit.devcluster import DevCluster
from tests.ui.forms import change_form

pytestmark = pytest.mark.django_db


def _spec(cluster: DevCluster, namespace: str) -> dict[str, object]:
    result = cluster.kubectl("get", "rolloutanalysis", "checkout", "-n", namespace, "-o", "json")
    return dict(json.loads(result.stdout)["spec"])


def test_notify_round_trips_through_the_form(
    staff_client: Client, ui_cluster: DevCluster, namespace: str
) -> None:
    data = change_form(None, namespace=namespace, name="checkout")
    data["notify"] = "payments-slack, ops-mail"
    added = staff_client.post(reverse("admin:analyses_analysis_add"), data)
    assert added.status_code == 302, added.content.decode()[-2000:]
    assert _spec(ui_cluster, namespace)["notify"] == ["payments-slack", "ops-mail"]

    row = Analysis.objects.live().get(namespace=namespace, name="checkout")
    url = reverse("admin:analyses_analysis_change", args=[row.pk])
    page = staff_client.get(url).content.decode()
    assert 'value="payments-slack, ops-mail"' in page
    # Saving another field keeps the channels the page showed.
    again = change_form(row, failure_limit=5)
    again["notify"] = "payments-slack, ops-mail"
    assert staff_client.post(url, again).status_code == 302
    spec = _spec(ui_cluster, namespace)
    assert spec["notify"] == ["payments-slack", "ops-mail"] and spec["failureLimit"] == 5

    row.refresh_from_db()
    bad = change_form(row)
    bad["notify"] = "Not_A_Label"
    refused = staff_client.post(url, bad)
    assert refused.status_code == 200
    errors = refused.context["adminform"].form.errors
    assert [m for m in errors["notify"] if m.startswith("must be a DNS-1123 label")], errors
