"""The admin's provider select (docs/api.md, "Metric providers"): the providers the namespace
may use, and a save naming one it may not is refused on the provider field, nothing written to
the cluster.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from django.test import Client
from django.urls import reverse
from pytest_django.fixtures import Settings

from analyses.models import Analysis
from testkit.devcluster import DevCluster
from tests.ui.forms import change_form

pytestmark = pytest.mark.django_db

_namespaces = itertools.count(1)


@pytest.fixture
def namespace(ui_cluster: DevCluster, settings: Settings, tmp_path: Path) -> str:
    settings.SENTINEL_KUBECONFIG = str(ui_cluster.kubeconfig)
    name = f"ui-providers-{next(_namespaces)}"
    ui_cluster.kubectl("create", "namespace", name)
    providers = [
        {"name": "vm", "url": "http://vm.example", "namespaces": [name]},
        {"name": "restricted", "url": "http://r.example", "namespaces": ["payments-*"]},
    ]
    path = tmp_path / "providers.yaml"
    path.write_text(yaml.safe_dump({"providers": providers}))
    settings.SENTINEL = replace(settings.SENTINEL, providers_file=str(path))
    return name


def _add(client: Client, namespace: str, name: str, provider: str) -> str:
    data = change_form(None, namespace=namespace, name=name, metrics=[("m", "up", 1.0)])
    data["metrics-0-provider"] = provider
    response = client.post(reverse("admin:analyses_analysis_add"), data)
    return f"{response.status_code} {response.content.decode()}"


def test_the_select_offers_what_the_namespace_may_use_and_saves_it(
    staff_client: Client, ui_cluster: DevCluster, namespace: str
) -> None:
    assert _add(staff_client, namespace, "checkout", "vm").startswith("302")
    spec = yaml.safe_load(
        ui_cluster.kubectl("get", "ra", "checkout", "-n", namespace, "-o", "yaml").stdout
    )["spec"]
    assert spec["metrics"][0]["provider"] == "vm"
    row = Analysis.objects.live().get(namespace=namespace, name="checkout")
    page = staff_client.get(reverse("admin:analyses_analysis_change", args=[row.pk]))
    field = page.context["inline_admin_formsets"][0].formset.forms[0]["provider"]
    assert [value for value, _ in field.field.choices] == ["default", "vm"]
    assert field.value() == "vm"


def test_a_provider_the_namespace_may_not_use_is_refused_and_nothing_written(
    staff_client: Client, ui_cluster: DevCluster, namespace: str
) -> None:
    data = change_form(None, namespace=namespace, name="checkout", metrics=[("m", "up", 1.0)])
    data["metrics-0-provider"] = "restricted"
    response = staff_client.post(reverse("admin:analyses_analysis_add"), data)
    assert response.status_code == 200
    (metric,) = response.context["inline_admin_formsets"][0].formset.forms
    (message,) = metric.errors["provider"]
    assert message.startswith("provider 'restricted' may not be used")
    listed = ui_cluster.kubectl("get", "ra", "-n", namespace, "-o", "name").stdout
    assert listed.strip() == ""
