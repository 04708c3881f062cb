"""Fixtures of the UI tests: users with and without change permission, and a devcluster.

The devcluster is real (HTTPS, the CRD applied by kubectl); tests that write through the admin
point ``settings.SENTINEL_KUBECONFIG`` at it, as ``analyses.services`` reads that setting.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from devcluster.testing import DevCluster

REPO_ROOT = Path(__file__).resolve().parents[2]
CRD_PATH = REPO_ROOT / "crds" / "rolloutanalysis.yaml"
PASSWORD = "correct-horse-battery"


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
    return user


@pytest.fixture
def viewer_client(viewer: User) -> Client:
    client = Client()
    client.force_login(viewer)
    return client


@pytest.fixture(scope="session")
def ui_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    """One devcluster for the UI tests, with the RolloutAnalysis CRD served."""
    cluster = DevCluster(tmp_path_factory.mktemp("ui-devcluster"))
    cluster.start()
    try:
        cluster.kubectl("apply", "-f", str(CRD_PATH))
        deadline = time.monotonic() + 20
        while cluster.kubectl("get", "rolloutanalyses", "-A", check=False).returncode != 0:
            if time.monotonic() > deadline:
                raise AssertionError("the RolloutAnalysis CRD was not served within 20 s")
            time.sleep(0.1)
        yield cluster
    finally:
        cluster.stop()
