"""Notifications through the REST API (docs/api.md#notifications): a resume through the API is
one Resumed message naming the user, sent to a real webhook; ``GET …/notifications/`` lists
deliveries with the evaluations endpoint's authentication, scope and per-namespace
authorization, and never a channel's URL."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from analyses.models import Analysis
from notifications.config import Channel, NotifyConfig
from notifications.models import Delivery
from notifications.tasks import deliver_task
from sentinel_cluster import kube
from testkit.clusters import Cluster
from testkit.manifests import deployment_manifest
from testkit.webhook import WebhookReceiver
from tests.api.authz_setup import grant
from tests.api.client import ALL_PERMISSIONS, Api, MakeApi, make_user
from tests.api.test_actions import _apply, _create, _pause_as_the_operator, _paused_by
from tests.api.test_authz import _api_of

pytestmark = pytest.mark.django_db(transaction=True)

TOKEN = "T0KEN-very-secret-123456"


@pytest.fixture
def webhook(settings: Any) -> Any:
    receiver = WebhookReceiver().start()
    # The URL carries a "token" that must never come back through the API.
    url = f"{receiver.apprise_url}?:token={TOKEN}"
    settings.SENTINEL_NOTIFY = NotifyConfig(
        channels=(Channel("team-hook", url, default=True),), path="test.yaml"
    )
    yield receiver
    receiver.stop()


def test_resume_through_the_api_is_one_resumed_message_naming_who(
    make_api: MakeApi,
    namespace: str,
    api_cluster: Cluster,
    cluster_client: kube.KubeClient,
    webhook: WebhookReceiver,
) -> None:
    key = f"{namespace}/guard"
    _apply(
        api_cluster,
        deployment_manifest("checkout", namespace, paused=True, annotations=_paused_by(key)),
    )
    api = make_api(*ALL_PERMISSIONS)
    _create(api, namespace, "guard")
    _pause_as_the_operator(cluster_client, namespace, "guard")
    user = User.objects.order_by("-id").first()
    assert user is not None

    assert api.post(f"analyses/{namespace}/guard/resume/").status_code == 200
    # A second resume of what this analysis no longer holds changes nothing and says nothing.
    assert api.post(f"analyses/{namespace}/guard/resume/").status_code == 409
    [row] = Delivery.objects.all()
    assert (row.event, row.channel, row.state) == ("Resumed", "team-hook", "pending")
    assert f"resumed by {user.get_username()} through the REST API" in row.message

    # Sent by the task the operator's pump would queue: a real POST to the receiver.
    assert deliver_task(row.pk) == "sent"
    [message] = webhook.messages
    assert message.title == f"Rollout Sentinel: Resumed — {namespace}/guard"
    assert f"resumed by {user.get_username()} through the REST API" in message.message
    assert message.body["type"] == "info"
    assert message.attachments[0][1] == "image/png"

    listed = api.get(f"analyses/{namespace}/guard/notifications/")
    assert listed.status_code == 200, listed.text
    [item] = listed.json()["results"]
    assert (item["event"], item["channel"], item["state"], item["attempts"]) == (
        "Resumed",
        "team-hook",
        "sent",
        1,
    )
    assert item["tries"][0]["ok"] is True and item["nextAttemptAt"] is None
    assert TOKEN not in listed.text and str(webhook.port) not in listed.text


def test_notifications_endpoint_has_the_evaluations_access_rules(
    namespace: str,
    api_cluster: Cluster,
    cluster_client: kube.KubeClient,
    live_server: Any,
    make_api: MakeApi,
    webhook: WebhookReceiver,
) -> None:
    owner = make_api(*ALL_PERMISSIONS)
    _create(owner, namespace, "guard")
    analysis = Analysis.objects.get(namespace=namespace, name="guard")
    Delivery.objects.create(
        key="uid/Paused@x/team-hook",
        analysis=analysis,
        namespace=namespace,
        name="guard",
        channel="team-hook",
        event="Paused",
        message="paused",
        transition_at=analysis.created_at,
        created_at=analysis.created_at,
        state="failed",
        attempts=6,
        last_error="HTTP 500",
    )
    path = f"analyses/{namespace}/guard/notifications/"
    assert owner.get(path).json()["results"][0]["lastError"] == "HTTP 500"
    # No credentials: 401, as for evaluations.
    assert make_api(None).get(path).status_code == 401
    # No view permission: 403.
    assert make_api("add_analysis").get(path).status_code == 403
    # Every permission, but granted another namespace only: not even seen.
    stranger: Api = _api_of(make_user(*ALL_PERMISSIONS, namespaces=("elsewhere",)), live_server)
    assert stranger.get(path).status_code == 404
    assert stranger.get(f"analyses/{namespace}/guard/evaluations/").status_code == 404
    granted = make_user(*ALL_PERMISSIONS, namespaces=())
    grant(cluster_client, namespace, user=granted)
    assert _api_of(granted, live_server).get(path).status_code == 200
    # Unknown analysis: 404.
    assert owner.get(f"analyses/{namespace}/nope/notifications/").status_code == 404
