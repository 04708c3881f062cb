"""Authentication (token, bearer, session with CSRF), model permissions and JSON errors."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import requests
from django.core.management import CommandError, call_command

from accounts.models import ApiToken
from analyses.models import Analysis
from testkit.clusters import Cluster, kubectl_json
from testkit.manifests import analysis_spec as spec
from testkit.paths import REPO_ROOT
from tests.api.client import Api, MakeApi, make_user

pytestmark = pytest.mark.django_db(transaction=True)


def test_no_credentials_is_401_with_a_challenge(make_api: MakeApi) -> None:
    anonymous = make_api(None)
    for response in (
        anonymous.get("analyses/"),
        anonymous.post("analyses/", json={}),
        anonymous.get("analyses/ns/name/evaluations/"),
        anonymous.post("analyses/ns/name/resume/"),
    ):
        assert response.status_code == 401
        assert response.headers["WWW-Authenticate"].startswith("Token")
        assert response.json()["code"] == "not_authenticated"


@pytest.mark.parametrize(
    "header",
    ["Token rs_0000000000", "Bearer nonsense", "Token", "Token a b", "Bearer \u00e9t\u00e9"],
)
def test_bad_tokens_are_401(make_api: MakeApi, header: str) -> None:
    api = make_api(None)
    response = api.get("analyses/", headers={"Authorization": header.encode()})
    assert response.status_code == 401
    assert response.json()["code"] == "authentication_failed"


def test_token_and_bearer_both_authenticate(make_api: MakeApi) -> None:
    assert make_api("view_analysis").get("analyses/").status_code == 200
    assert make_api("view_analysis", keyword="Bearer").get("analyses/").status_code == 200


def test_revoked_token_and_inactive_user_are_401(make_api: MakeApi) -> None:
    api = make_api("view_analysis")
    assert api.get("analyses/").status_code == 200
    token = ApiToken.objects.get()
    token.revoked = True
    token.save()
    assert api.get("analyses/").status_code == 401

    other = make_api("view_analysis")
    user = ApiToken.objects.get(revoked=False).user
    user.is_active = False
    user.save()
    assert other.get("analyses/").status_code == 401


def test_tokens_are_stored_hashed(make_api: MakeApi) -> None:
    api = make_api("view_analysis")
    plaintext = api.headers["Authorization"].split()[1]
    token = ApiToken.objects.get()
    assert plaintext.startswith(token.prefix)
    assert plaintext not in (token.digest, token.name)
    assert token.last_used_at is None
    api.get("analyses/")
    token.refresh_from_db()
    assert token.last_used_at is not None


def test_reading_needs_view_permission(make_api: MakeApi, api: Api, namespace: str) -> None:
    api.post("analyses/", json={"namespace": namespace, "name": "checkout", "spec": spec()})
    nobody = make_api()
    for path in (
        "analyses/",
        f"analyses/{namespace}/checkout/",
        f"analyses/{namespace}/checkout/evaluations/",
    ):
        response = nobody.get(path)
        assert response.status_code == 403, path
        assert response.json()["code"] == "permission_denied"
    assert make_api("view_analysis").get(f"analyses/{namespace}/checkout/").status_code == 200


def test_writing_needs_the_matching_permission(
    make_api: MakeApi, api: Api, namespace: str, api_cluster: Cluster
) -> None:
    created = api.post(
        "analyses/", json={"namespace": namespace, "name": "checkout", "spec": spec()}
    ).json()
    viewer = make_api("view_analysis")
    base = f"analyses/{namespace}/checkout/"

    refused = [
        viewer.post("analyses/", json={"namespace": namespace, "name": "x", "spec": spec()}),
        viewer.put(base, json={"spec": spec(failureLimit=9)}),
        viewer.patch(base, json={"spec": {"failureLimit": 9}}),
        viewer.delete(base),
        viewer.post(f"{base}resume/"),
        viewer.post(f"{base}evaluate/"),
        # Adding does not imply changing; changing does not imply deleting.
        make_api("view_analysis", "add_analysis").post(f"{base}resume/"),
        make_api("view_analysis", "change_analysis").delete(base),
    ]

    assert [r.status_code for r in refused] == [403] * len(refused)
    in_cluster = kubectl_json(api_cluster, "rolloutanalyses", "-n", namespace)
    assert [item["metadata"]["resourceVersion"] for item in in_cluster["items"]] == [
        created["resourceVersion"]
    ]
    assert Analysis.objects.count() == 1
    assert Analysis.objects.get().next_due_at is not None
    changer = make_api("view_analysis", "change_analysis")
    assert changer.post(f"{base}evaluate/").status_code == 202


def _browser_login(live_server: Any) -> requests.Session:
    """Log in through the admin's login form, as a browser does; return the session."""
    user = make_user(*("view_analysis", "add_analysis", "change_analysis"))
    user.is_staff = True
    user.save()
    browser = requests.Session()
    page = browser.get(f"{live_server.url}/admin/login/", timeout=10)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token is not None
    response = browser.post(
        f"{live_server.url}/admin/login/?next=/admin/",
        data={
            "username": user.username,
            "password": "pw-for-tests",
            "csrfmiddlewaretoken": token.group(1),
        },
        timeout=10,
        allow_redirects=False,
    )
    assert response.status_code == 302, response.text
    return browser


def test_session_authentication_enforces_csrf(live_server: Any, namespace: str) -> None:
    browser = _browser_login(live_server)
    url = f"{live_server.url}/api/v1/analyses/"
    body = {"namespace": namespace, "name": "checkout", "spec": spec()}

    assert browser.get(url, timeout=10).status_code == 200
    refused = browser.post(url, json=body, timeout=10)
    assert refused.status_code == 403
    assert "CSRF" in refused.json()["detail"]
    assert not Analysis.objects.exists()

    headers = {"X-CSRFToken": browser.cookies["csrftoken"], "Referer": live_server.url}
    accepted = browser.post(url, json=body, headers=headers, timeout=10)
    assert accepted.status_code == 201, accepted.text


def test_errors_are_json_everywhere(api: Api) -> None:
    missing = api.get("analyses/nowhere/nothing/")
    assert missing.status_code == 404
    assert missing.json()["code"] == "not_found"
    unknown = api.get("no-such-endpoint/")
    assert unknown.status_code == 404
    assert unknown.headers["Content-Type"] == "application/json"
    assert unknown.json()["code"] == "not_found"
    no_slash = api.get("analyses")
    assert no_slash.status_code == 404 and "slash" in no_slash.json()["detail"]
    wrong_method = api.delete("analyses/")
    assert wrong_method.status_code == 405
    assert wrong_method.json()["code"] == "method_not_allowed"


def test_create_api_token_prints_a_working_token(live_server: Any) -> None:
    user = make_user("view_analysis")
    out = io.StringIO()
    call_command("create_api_token", user.username, "--name", "ci", stdout=out)
    plaintext = out.getvalue().strip()

    assert ApiToken.objects.get().name == "ci"
    response = requests.get(
        f"{live_server.url}/api/v1/analyses/",
        headers={"Authorization": f"Bearer {plaintext}"},
        timeout=10,
    )
    assert response.status_code == 200
    with pytest.raises(CommandError, match="No user named 'ghost'"):
        call_command("create_api_token", "ghost")


def test_create_api_token_for_an_unknown_user_is_one_line_and_exit_1(tmp_path: Path) -> None:
    env = dict(os.environ, DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}")
    manage = [sys.executable, str(REPO_ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "-v0"], env=env, check=True, timeout=120)

    result = subprocess.run(
        [*manage, "create_api_token", "ghost"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        "CommandError: No user named 'ghost'; create it first."
    ]
