"""The admin's deliveries list (filters, namespace grants) and the channels page with its
"send test message" button, which posts a real message to a loopback webhook."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse

from accounts.models import NamespaceGrant
from analyses.models import Analysis
from notifications.config import Channel, NotifyConfig
from notifications.models import Delivery
from testkit.ports import free_port
from testkit.webhook import WebhookReceiver
from tests.ui import factories

pytestmark = pytest.mark.django_db

TOKEN = "very-secret-admin-token"


def delivery(row: Analysis, event: str, state: str) -> Delivery:
    return Delivery.objects.create(
        key=f"{row.uid}/{event}@t/hook",
        analysis=row,
        namespace=row.namespace,
        name=row.name,
        channel="hook",
        event=event,
        message=f"{event} of {row.name}",
        transition_at=factories.T0,
        created_at=factories.T0,
        state=state,
    )


def client_of(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def webhook(settings: Any) -> Any:
    receiver = WebhookReceiver().start()
    settings.SENTINEL_NOTIFY = NotifyConfig(
        channels=(
            Channel("hook", f"{receiver.apprise_url}?:token={TOKEN}", default=True),
            Channel("down", f"json://127.0.0.1:{free_port()}/{TOKEN}"),
        ),
        path="/etc/sentinel/notify.yaml",
        timeout_seconds=2,
    )
    yield receiver
    receiver.stop()


def test_deliveries_list_filters_and_grants(webhook: WebhookReceiver) -> None:
    shop = factories.analysis("checkout")
    web = factories.analysis("search", namespace="web")
    delivery(shop, "Paused", "sent")
    delivery(shop, "Resumed", "failed")
    delivery(web, "Paused", "pending")
    boss = User.objects.create_superuser("boss", "b@example.com", None)
    url = reverse("admin:notifications_delivery_changelist")
    page = client_of(boss).get(url)
    assert page.status_code == 200
    assert page.content.decode().count('class="field-event"') == 3
    failed = client_of(boss).get(url, {"state__exact": "failed"}).content.decode()
    assert failed.count('class="field-event"') == 1 and "Resumed" in failed
    assert "Channels and test messages" in page.content.decode()
    # One delivery's page, with its tries.
    one = Delivery.objects.get(event="Resumed")
    one.tries.create(started_at=factories.T0, duration_seconds=0.2, ok=False, error="HTTP 500")
    detail = client_of(boss).get(reverse("admin:notifications_delivery_change", args=[one.pk]))
    assert detail.status_code == 200 and "HTTP 500" in detail.content.decode()

    # A staff user granted namespace web only sees web's deliveries.
    user = User.objects.create_user("webber", "w@example.com", None, is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_delivery"))
    NamespaceGrant.objects.create(user=user, namespace="web", can_view=True)
    seen = client_of(user).get(url).content.decode()
    assert seen.count('class="field-event"') == 1 and "search" in seen


def test_channels_page_redacts_and_sends_a_test_message(webhook: WebhookReceiver) -> None:
    boss = User.objects.create_superuser("boss", "b@example.com", None)
    client = client_of(boss)
    page = client.get(reverse("admin:notifications_channels")).content.decode()
    assert 'data-name="hook"' in page and 'data-name="down"' in page
    assert "json://127.0.0.1/…" in page
    assert TOKEN not in page

    sent = client.post(reverse("admin:notifications_channel_test", args=["hook"]), follow=True)
    assert "Test message sent to hook." in sent.content.decode()
    [message] = webhook.messages
    assert message.title == "Rollout Sentinel: test message"
    assert "sent by boss" in message.message

    failed = client.post(reverse("admin:notifications_channel_test", args=["down"]), follow=True)
    text = failed.content.decode()
    assert "Test message to down failed:" in text and TOKEN not in text

    # Viewing is not enough to send.
    viewer = User.objects.create_user("viewer", "v@example.com", None, is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_delivery"))
    refused = client_of(viewer).post(reverse("admin:notifications_channel_test", args=["hook"]))
    assert refused.status_code == 403
    assert len(webhook.messages) == 1
