"""SENTINEL_PROVIDERS_FILE's schema: one line naming file, provider and field."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from django.test import Client

from sentinel_core.provider import namespace_allowed
from sentinel_operator.provider_config import ProvidersError, parse_file
from testkit.paths import MANAGE, REPO_ROOT
from testkit.site_env import with_defaults


def write(path: Path, providers: object) -> Path:
    path.write_text(yaml.safe_dump({"providers": providers}, sort_keys=False))
    return path


def error_of(path: Path) -> str:
    with pytest.raises(ProvidersError) as caught:
        parse_file(str(path))
    return str(caught.value)


@pytest.mark.parametrize(
    ("providers", "expected"),
    [
        (
            [{"name": "mimir", "url": "https://m", "tls": {"caFile": "/nonexistent/ca.crt"}}],
            "provider 'mimir' field tls.caFile: file not found",
        ),
        (
            [{"name": "a", "url": "http://a"}, {"name": "Bad_Name", "url": "http://b"}],
            "provider 'Bad_Name' field name: String should match pattern",
        ),
        (
            [{"name": "a", "url": "mailto:x@example.com"}],
            "provider 'a' field url: must be a http or https URL",
        ),
        (
            [{"name": "a", "url": "http://u:hunter2@a"}],
            "provider 'a' field url: may not carry user:password",
        ),
        (
            [{"name": "a", "url": "http://a", "headers": {"Authorization": "Bearer x"}}],
            "provider 'a' field headers: 'Authorization' carries credentials",
        ),
        (
            [{"name": "a", "url": "http://a", "timeout": "forever"}],
            "provider 'a' field timeout: must be a duration",
        ),
        (
            [{"name": "a", "url": "http://a", "basicAuth": {"username": "u"}}],
            "provider 'a' field basicAuth.passwordFile: Field required",
        ),
        (
            [{"name": "a", "url": "http://a", "tls": {"certFile": "/x"}}],
            "provider 'a' field tls: certFile and keyFile go together",
        ),
        ([{"url": "http://a"}], "provider #1 field name: Field required"),
        (
            [{"name": "a", "url": "http://a", "colour": "blue"}],
            "provider 'a' field colour: Extra inputs are not permitted",
        ),
        (
            [{"name": "a", "url": "http://a"}] * 2,
            "provider 'a' field name: duplicate, already provider #1",
        ),
    ],
)
def test_each_mistake_is_one_line_naming_file_provider_and_field(
    tmp_path: Path, providers: object, expected: str
) -> None:
    path = write(tmp_path / "providers.yaml", providers)
    line = error_of(path)
    assert line.startswith(f"SENTINEL_PROVIDERS_FILE {path}: {expected}")
    assert "\n" not in line


def test_an_empty_secret_file_and_a_missing_file_are_named(tmp_path: Path) -> None:
    empty = tmp_path / "token"
    empty.write_text("\n")
    path = write(
        tmp_path / "p.yaml", [{"name": "vm", "url": "http://v", "bearerTokenFile": str(empty)}]
    )
    assert error_of(path).endswith("provider 'vm' field bearerTokenFile: the file is empty")
    assert error_of(tmp_path / "absent.yaml").endswith(
        "absent.yaml: cannot read it: No such file or directory"
    )


def test_namespace_patterns() -> None:
    assert namespace_allowed(None, "anything")
    assert namespace_allowed(["payments", "payments-*"], "payments-eu")
    assert not namespace_allowed(["payments-*"], "payments")
    assert not namespace_allowed([], "payments")


def run(command: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # A bound against a hang, not a speed target: under a parallel suite on a loaded 2-core
    # machine, starting runoperator (Django, Apprise, matplotlib) alone took over 60 s.
    return subprocess.run(
        [sys.executable, str(MANAGE), command],
        cwd=REPO_ROOT,
        env=with_defaults({**os.environ, **env}),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_operator_refuses_to_start_with_one_line(tmp_path: Path) -> None:
    bad_schema = write(tmp_path / "schema.yaml", [{"name": "a", "url": "ftp://a"}])
    missing_secret = write(
        tmp_path / "secret.yaml",
        [{"name": "vm", "url": "http://v", "bearerTokenFile": str(tmp_path / "nope")}],
    )
    for path, line in (
        (bad_schema, "provider 'a' field url: must be a http or https URL"),
        (missing_secret, "provider 'vm' field bearerTokenFile: file not found"),
    ):
        done = run("runoperator", {"SENTINEL_PROVIDERS_FILE": str(path)})
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in done.stderr
        assert f"SENTINEL_PROVIDERS_FILE {path}: {line}" in lines[0]


@pytest.mark.django_db
def test_the_rest_api_refuses_a_provider_the_namespace_may_not_use(
    tmp_path: Path, admin_client: Client, settings: object
) -> None:
    path = write(
        tmp_path / "providers.yaml",
        [{"name": "mimir-payments", "url": "http://m", "namespaces": ["payments-*"]}],
    )
    settings.SENTINEL = replace(settings.SENTINEL, providers_file=str(path))  # type: ignore[attr-defined]
    metric = {"name": "m", "query": "vector(1)", "maxValue": 1}
    for namespace, provider, message in (
        ("shop", "mimir-payments", "may not be used from namespace 'shop'"),
        ("payments-eu", "elsewhere", "provider 'elsewhere' is not configured"),
    ):
        body = {
            "namespace": namespace,
            "name": "ra",
            "spec": {
                "target": {"kind": "Deployment", "name": "checkout"},
                "metrics": [{**metric, "provider": provider}],
            },
        }
        answer = admin_client.post("/api/v1/analyses/", body, content_type="application/json")
        assert answer.status_code == 400, answer.content
        errors = answer.json()
        assert message in " ".join(errors["spec.metrics[0].provider"])
