"""The OpenAPI document, its docs pages without any CDN, and a schemathesis run against it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import requests
from django.utils import timezone

from accounts import tokens
from testkit.manifests import analysis_spec as spec
from tests.api.client import Api, make_user

pytestmark = pytest.mark.django_db(transaction=True)

SCHEMATHESIS = Path(sys.executable).parent / "schemathesis"


def _signed_in() -> dict[str, str]:
    # The schema and its docs page need a login like every endpoint (tests/api/test_abuse.py).
    return {"Authorization": f"Token {tokens.issue(make_user(), now=timezone.now()).plaintext}"}


def test_schema_describes_every_endpoint(live_server: Any) -> None:
    response = requests.get(
        f"{live_server.url}/api/v1/schema/",
        params={"format": "json"},
        headers=_signed_in(),
        timeout=30,
    )
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    one = "/api/v1/analyses/{namespace}/{name}/"
    assert {path: set(ops) - {"parameters"} for path, ops in schema["paths"].items()} == {
        "/api/v1/analyses/": {"get", "post"},
        one: {"get", "put", "patch", "delete"},
        f"{one}evaluations/": {"get"},
        f"{one}resume/": {"post"},
        f"{one}evaluate/": {"post"},
        f"{one}notifications/": {"get"},
        f"{one}backtest/": {"post"},
        f"{one}backtest/{{id}}/": {"get", "delete"},
        # docs/api.md#templates: both kinds.
        "/api/v1/templates/{namespace}/": {"get", "post"},
        "/api/v1/templates/{namespace}/{name}/": {"get", "put", "delete"},
        "/api/v1/clustertemplates/": {"get", "post"},
        "/api/v1/clustertemplates/{name}/": {"get", "put", "delete"},
    }
    template = schema["components"]["schemas"]["Template"]["properties"]
    assert {"name", "resourceVersion", "generation", "spec"} <= set(template)
    replace = schema["paths"]["/api/v1/clustertemplates/{name}/"]["put"]["responses"]
    assert replace.keys() >= {"200", "400", "403", "409", "503"}
    components = schema["components"]["schemas"]
    # The backtest job's shape (docs/backtest.md).
    job = components["BacktestJob"]["properties"]
    assert {"state", "progress", "rollouts", "summary", "url"} <= set(job)
    rollout = components["BacktestRollout"]["properties"]
    assert {"revision", "rolledBack", "wouldPauseAt", "verdicts", "noData", "message"} <= set(
        rollout
    )
    assert schema["paths"][f"{one}backtest/"]["post"]["responses"].keys() >= {"202", "403"}
    # spec and status are described by the CRD's own schema.
    assert components["AnalysisSpec"]["properties"]["failureLimit"]["minimum"] == 1
    assert "conditions" in components["AnalysisStatus"]["properties"]
    assert "status" not in components["AnalysisRequest"]["properties"]
    evaluations = schema["paths"][f"{one}evaluations/"]["get"]
    assert {p["name"] for p in evaluations["parameters"]} >= {"since", "until", "cursor"}
    listing = schema["paths"]["/api/v1/analyses/"]["get"]
    assert {p["name"] for p in listing["parameters"]} >= {
        "namespace",
        "verdict",
        "paused",
        "search",
    }
    assert set(schema["components"]["securitySchemes"]) == {"tokenAuth", "cookieAuth"}


def test_docs_page_loads_nothing_from_another_host(live_server: Any) -> None:
    response = requests.get(
        f"{live_server.url}/api/v1/schema/docs/", headers=_signed_in(), timeout=30
    )
    assert response.status_code == 200
    html = response.text
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert assets, html
    for asset in assets:
        assert not re.match(r"^(https?:)?//", asset), f"{asset} is loaded from another host"
        loaded = requests.get(f"{live_server.url}{asset}", timeout=30)
        assert loaded.status_code == 200, asset
    # The page fetches the schema from this server, and nothing from anywhere else.
    assert "/api/v1/schema/" in html
    assert not re.search(r"https?://", html), re.findall(r"https?://\S+", html)
    assert '"validatorUrl": null' in html


@pytest.mark.slow
def test_schemathesis_finds_no_server_error(
    live_server: Any, api: Api, namespace: str, tmp_path: Path
) -> None:
    # Something real to find besides the 404s of generated names.
    created = api.post(
        "analyses/", json={"namespace": namespace, "name": "checkout", "spec": spec()}
    )
    assert created.status_code == 201
    user = make_user(is_superuser=True)
    token = tokens.issue(user, now=timezone.now()).plaintext

    result = subprocess.run(
        [
            str(SCHEMATHESIS),
            "run",
            # 127.0.0.1: skips trying ::1 first for every one of several hundred requests.
            f"{live_server.url.replace('localhost', '127.0.0.1')}/api/v1/schema/?format=json",
            "--header",
            f"Authorization: Token {token}",
            # See client.Api: keep-alive costs the live server ~40 ms a request, and a pooled
            # connection the server has closed is retried rather than reported.
            "--header",
            "Connection: close",
            "--request-retries",
            "2",
            "--checks",
            "not_a_server_error,status_code_conformance,content_type_conformance,"
            "response_schema_conformance",
            # The live server shares one in-memory SQLite database between its threads.
            "--workers",
            "1",
            "--max-examples",
            "8",
            "--phases",
            # Coverage: boundary values of every parameter; fuzzing: random ones.
            "coverage,fuzzing",
            "--seed",
            "1",
            "--generation-database",
            "none",
            "--no-color",
            "--report-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )

    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
