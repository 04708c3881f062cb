"""Fixtures of the UI tests: users with and without change permission, and a devcluster.

The devcluster is real (HTTPS, the CRD applied by kubectl); tests that write through the admin
point ``settings.SENTINEL_KUBECONFIG`` at it, as ``analyses.services`` reads that setting.
"""

from __future__ import annotations

import itertools

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from pytest_django.fixtures import Settings

from accounts.models import NamespaceGrant
from testkit.devcluster import DevCluster


@pytest.fixture
def superuser(db: None) -> User:
    # No password: hashing one costs half a second, and the test client logs in without it.
    return User.objects.create_superuser("platform", "platform@example.com", None)


@pytest.fixture
def staff_client(superuser: User) -> Client:
    client = Client()
    client.force_login(superuser)
    return client


@pytest.fixture
def viewer(db: None) -> User:
    """A staff user who may look at analyses but not change them."""
    user = User.objects.create_user("viewer", "viewer@example.com", None, is_staff=True)
    user.user_permissions.add(
        Permission.objects.get(codename="view_analysis", content_type__app_label="analyses")
    )
    # Every right in every namespace: here the model permission alone keeps the user read-only.
    NamespaceGrant.objects.create(
        user=user, namespace="*", can_view=True, can_edit=True, can_resume=True
    )
    return user


@pytest.fixture
def viewer_client(viewer: User) -> Client:
    client = Client()
    client.force_login(viewer)
    return client


@pytest.fixture(scope="session")
def ui_cluster(devcluster: DevCluster) -> DevCluster:
    """The session devcluster (CRD served): one of each kind per session is enough.

    The UI's tests use devcluster's fault hooks, and its cluster writes are the REST API's
    (``analyses.services``), which tests/api checks on both clusters.
    """
    return devcluster


_namespaces = itertools.count(1)


@pytest.fixture
def namespace(ui_cluster: DevCluster, settings: Settings) -> str:
    """Return a fresh namespace in the UI's devcluster, the admin pointed at that cluster."""
    settings.SENTINEL_KUBECONFIG = str(ui_cluster.kubeconfig)
    name = f"ui-forms-{next(_namespaces)}"
    ui_cluster.kubectl("create", "namespace", name)
    return name
