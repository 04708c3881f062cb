"""The detail page's actions and the form's own checks, without a cluster.

Permission and CSRF are refused before anything reaches ``analyses.services``; "Evaluate now"
only touches the mirror's schedule; the resume and save paths that do reach for the cluster are
pointed at a port where nothing listens, so they fail the way an unreachable cluster does.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from django.contrib.auth.models import User
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from pytest_django.fixtures import Settings

from analyses.models import Analysis
from testkit.ports import free_port
from tests.ui import factories
from tests.ui.forms import change_form

pytestmark = pytest.mark.django_db


@pytest.fixture
def paused() -> Analysis:
    return factories.analysis(
        "checkout", status_=factories.status(verdict="Fail", failures=3, paused=True)
    )


@pytest.fixture
def unreachable_cluster(settings: Settings, tmp_path: Path) -> None:
    """Point the services at an API server address where nothing listens."""
    port = free_port()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "gone",
                "cluster": {
                    "server": f"https://127.0.0.1:{port}",
                    "insecure-skip-tls-verify": True,
                },
            }
        ],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "gone", "user": "u"}}],
        "current-context": "c",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    settings.SENTINEL_KUBECONFIG = str(path)


def _messages(response) -> list[str]:  # type: ignore[no-untyped-def]
    return [str(m) for m in get_messages(response.wsgi_request)]


def _csrf_client(user: User) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return client


def _token(client: Client, analysis: Analysis) -> str:
    page = client.get(reverse("admin:analyses_analysis_change", args=[analysis.pk])).content
    match = re.search(
        rb'id="evaluate-form">\s*<input type="hidden" name="csrfmiddlewaretoken" '
        rb'value="([^"]+)"',
        page,
    )
    assert match is not None
    return match.group(1).decode()


def test_a_user_without_change_permission_gets_403_on_both_actions(
    viewer_client: Client, paused: Analysis
) -> None:
    for name in ("resume", "evaluate"):
        response = viewer_client.post(reverse(f"admin:analyses_analysis_{name}", args=[paused.pk]))
        assert response.status_code == 403, name
    row = Analysis.objects.get(pk=paused.pk)
    assert row.paused and row.failures == 3
    assert row.next_due_at == paused.next_due_at


def test_actions_refuse_get(staff_client: Client, paused: Analysis) -> None:
    for name in ("resume", "evaluate"):
        response = staff_client.get(reverse(f"admin:analyses_analysis_{name}", args=[paused.pk]))
        assert response.status_code == 405, name


def test_actions_need_the_csrf_token(superuser: User, paused: Analysis) -> None:
    client = _csrf_client(superuser)
    before = Analysis.objects.get(pk=paused.pk).next_due_at
    for name in ("resume", "evaluate"):
        response = client.post(reverse(f"admin:analyses_analysis_{name}", args=[paused.pk]))
        assert response.status_code == 403, name
        assert b"CSRF" in response.content
    assert Analysis.objects.get(pk=paused.pk).next_due_at == before


def test_evaluate_now_with_the_token_makes_the_analysis_due(
    superuser: User, paused: Analysis
) -> None:
    Analysis.objects.filter(pk=paused.pk).update(next_due_at=None)
    client = _csrf_client(superuser)
    token = _token(client, paused)
    started = timezone.now()
    response = client.post(
        reverse("admin:analyses_analysis_evaluate", args=[paused.pk]),
        {"csrfmiddlewaretoken": token},
    )
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:analyses_analysis_change", args=[paused.pk])
    due = Analysis.objects.get(pk=paused.pk).next_due_at
    assert due is not None and started <= due <= timezone.now()
    assert any("will be evaluated" in m for m in _messages(response))


def test_actions_on_a_deleted_analysis_are_404(staff_client: Client, paused: Analysis) -> None:
    Analysis.objects.filter(pk=paused.pk).update(deleted_at=timezone.now())
    response = staff_client.post(reverse("admin:analyses_analysis_evaluate", args=[paused.pk]))
    assert response.status_code == 404


@pytest.mark.usefixtures("unreachable_cluster")
def test_resume_with_the_cluster_unreachable_says_so_and_changes_nothing(
    staff_client: Client, paused: Analysis
) -> None:
    response = staff_client.post(reverse("admin:analyses_analysis_resume", args=[paused.pk]))
    assert response.status_code == 302
    (message,) = _messages(response)
    assert message.startswith("Cluster unreachable")
    row = Analysis.objects.get(pk=paused.pk)
    assert row.paused and row.failures == 3 and row.resource_version == paused.resource_version


@pytest.mark.usefixtures("unreachable_cluster")
def test_saving_with_the_cluster_unreachable_keeps_the_input_and_writes_nothing(
    staff_client: Client, paused: Analysis
) -> None:
    data = change_form(paused, target="checkout-v2", metrics=[("p99-latency", "up", 0.5)])
    response = staff_client.post(reverse("admin:analyses_analysis_change", args=[paused.pk]), data)
    assert response.status_code == 200
    page = response.content.decode()
    assert "Cluster unreachable" in page
    assert 'value="checkout-v2"' in page  # the user's edit is still in the form
    row = Analysis.objects.get(pk=paused.pk)
    assert row.target_name == "checkout"
    assert [(m.name, m.max_value) for m in row.metrics.all()] == [("p99-latency", 0.25)]
    assert row.spec["target"]["name"] == "checkout"


@pytest.mark.usefixtures("unreachable_cluster")
def test_adding_with_the_cluster_unreachable_writes_no_row(staff_client: Client) -> None:
    data = change_form(None, namespace="shop", name="new-one")
    response = staff_client.post(reverse("admin:analyses_analysis_add"), data)
    assert response.status_code == 200
    assert "Cluster unreachable" in response.content.decode()
    assert not Analysis.objects.filter(name="new-one").exists()


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"interval": "3s"}, "interval", "at least 5s"),
        ({"interval": "soon"}, "interval", "is not a duration"),
        ({"failure_limit": 0}, "failure_limit", "greater than or equal to 1"),
        ({"target": "Checkout_v2"}, "target_name", "lower-case"),
        ({"metrics": [("P99", "up", 1.0)]}, None, "lower-case"),
        ({"metrics": [("a", "up", 1.0), ("a", "down", 2.0)]}, None, "duplicate data for name"),
    ],
)
def test_invalid_input_is_refused_before_reaching_the_cluster(
    staff_client: Client, paused: Analysis, changes: dict, field: str | None, message: str
) -> None:
    response = staff_client.post(
        reverse("admin:analyses_analysis_change", args=[paused.pk]),
        change_form(paused, **changes),
    )
    assert response.status_code == 200
    if field is not None:
        assert message in " ".join(response.context["adminform"].form.errors[field])
    else:
        assert message in response.content.decode().replace("&#x27;", "'")
    assert Analysis.objects.get(pk=paused.pk).resource_version == paused.resource_version


def test_an_edit_of_a_spec_changed_meanwhile_is_refused(
    staff_client: Client, paused: Analysis
) -> None:
    data = change_form(paused, target="checkout-v2")
    # Someone edited the spec with kubectl after the page was loaded; the watch mirrored it.
    Analysis.objects.filter(pk=paused.pk).update(generation=paused.generation + 1)
    response = staff_client.post(reverse("admin:analyses_analysis_change", args=[paused.pk]), data)
    assert response.status_code == 200
    assert "changed in the cluster after you opened this page" in response.content.decode()
    assert Analysis.objects.get(pk=paused.pk).target_name == "checkout"


def test_deleting_every_metric_is_refused(staff_client: Client, paused: Analysis) -> None:
    data = change_form(paused)
    data["metrics-0-DELETE"] = "on"
    response = staff_client.post(reverse("admin:analyses_analysis_change", args=[paused.pk]), data)
    assert response.status_code == 200
    assert "spec.metrics: must contain at least one metric" in response.content.decode()
    assert Analysis.objects.get(pk=paused.pk).metrics.count() == 1
