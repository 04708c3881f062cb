"""Production settings (docs/security.md): no key, no start; ``check --deploy`` clean but W008."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from sentinel_site import config

ROOT = Path(__file__).resolve().parents[2]
# 50+ varied characters: what security.W009 asks of a key.
STRONG_KEY = "kq3Jx9vLr2Tz8Wm4Pa7Hd1Nf6Bc5Ye0Gu-Qs_Ri3Ko8Lp2Xt7Vw9Mz4Cn"


def _manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # A bare environment: nothing inherited from the test run (its key, its cookie setting).
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "DATABASE_URL": "sqlite:////tmp/unused.sqlite3", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_start_up_without_a_secret_key_is_one_line_naming_it() -> None:
    result = _manage("check", env={})
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("rollout-sentinel: configuration error: SENTINEL_SECRET_KEY must")


def test_debug_mode_runs_with_the_development_key(tmp_path: Path) -> None:
    assert config.load({"SENTINEL_DEBUG": "true"}, tmp_path).secret_key.startswith("insecure-")
    with pytest.raises(ImproperlyConfigured, match="SENTINEL_SECRET_KEY"):
        config.load({"SENTINEL_DEBUG": "false"}, tmp_path)


def test_check_deploy_reports_only_w008_with_key_and_hosts_set() -> None:
    result = _manage(
        "check",
        "--deploy",
        env={"SENTINEL_SECRET_KEY": STRONG_KEY, "SENTINEL_ALLOWED_HOSTS": "sentinel.example.com"},
    )
    output = result.stdout + result.stderr
    warnings = sorted(
        {word.strip(":()") for word in output.split() if word.strip(":()").startswith("security.")}
    )
    assert warnings == ["security.W008"], output


def test_ssl_redirect_silences_w008_too() -> None:
    result = _manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        env={
            "SENTINEL_SECRET_KEY": STRONG_KEY,
            "SENTINEL_ALLOWED_HOSTS": "sentinel.example.com",
            "SENTINEL_SECURE_SSL_REDIRECT": "true",
        },
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_tls_settings_come_from_the_environment(tmp_path: Path) -> None:
    cfg = config.load(
        {
            "SENTINEL_SECRET_KEY": STRONG_KEY,
            "SENTINEL_HSTS_SECONDS": "600",
            "SENTINEL_SECURE_PROXY_SSL_HEADER": "X-Forwarded-Scheme: https",
            "SENTINEL_CSRF_TRUSTED_ORIGINS": "https://sentinel.example.com,https://b.example.com",
        },
        tmp_path,
    )
    assert cfg.hsts_seconds == 600
    assert cfg.secure_proxy_ssl_header == ("HTTP_X_FORWARDED_SCHEME", "https")
    assert cfg.csrf_trusted_origins == ("https://sentinel.example.com", "https://b.example.com")
    assert cfg.secure_cookies is True
    assert config.load({"SENTINEL_DEBUG": "true"}, tmp_path).secure_cookies is False


@pytest.mark.parametrize(
    ("name", "value", "fragment"),
    [
        ("SENTINEL_AUTHZ", "ldap", "use django or kubernetes"),
        ("SENTINEL_HSTS_SECONDS", "a year", "whole number of seconds"),
        ("SENTINEL_SECURE_PROXY_SSL_HEADER", "https", "'Header-Name: value'"),
        ("SENTINEL_CSRF_TRUSTED_ORIGINS", "sentinel.example.com", "is not a http or https URL"),
        ("SENTINEL_REMOTE_USER_HEADER", "X User", "is not an HTTP header name"),
        ("SENTINEL_REMOTE_GROUPS_HEADER", "X-Groups", "without SENTINEL_REMOTE_USER_HEADER"),
        ("SENTINEL_NUM_PROXIES", "1", "replaced by SENTINEL_TRUSTED_PROXIES"),
        ("SENTINEL_TRUSTED_PROXIES", "10.0.0.7,ingress", "'ingress' is not an IP address or CIDR"),
        ("SENTINEL_TRUSTED_PROXIES", "0.0.0.0/0", "trusts every address"),
        ("SENTINEL_SECURE_COOKIES", "maybe", "is not a boolean"),
    ],
)
def test_malformed_security_settings_are_one_sentence(
    tmp_path: Path, name: str, value: str, fragment: str
) -> None:
    with pytest.raises(ImproperlyConfigured, match=name) as info:
        config.load({"SENTINEL_SECRET_KEY": STRONG_KEY, name: value}, tmp_path)
    assert fragment in str(info.value)


def test_the_sso_header_without_trusted_proxies_stops_start_up_in_one_line() -> None:
    env = {"SENTINEL_SECRET_KEY": STRONG_KEY, "SENTINEL_REMOTE_USER_HEADER": "X-Forwarded-User"}
    result = _manage("check", env=env)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(
        "rollout-sentinel: configuration error: SENTINEL_REMOTE_USER_HEADER is set but "
        "SENTINEL_TRUSTED_PROXIES names no proxy"
    )
    trusted = _manage("check", env={**env, "SENTINEL_TRUSTED_PROXIES": "10.42.0.0/16"})
    assert trusted.returncode == 0, trusted.stderr


def test_trusted_proxies_are_read_as_networks(tmp_path: Path) -> None:
    cfg = config.load(
        {"SENTINEL_SECRET_KEY": STRONG_KEY, "SENTINEL_TRUSTED_PROXIES": "10.0.0.7, 10.42.0.0/16"},
        tmp_path,
    )
    assert cfg.trusted_proxies == ("10.0.0.7/32", "10.42.0.0/16")
    assert config.load({"SENTINEL_SECRET_KEY": STRONG_KEY}, tmp_path).trusted_proxies == ()


def test_the_operator_without_its_task_key_stops_in_one_line() -> None:
    result = _manage("runoperator", env={"SENTINEL_SECRET_KEY": STRONG_KEY})
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("CommandError: SENTINEL_TASK_KEY must be set for the operator")


def test_the_task_key_may_not_be_the_secret_key(tmp_path: Path) -> None:
    same = {"SENTINEL_SECRET_KEY": STRONG_KEY, "SENTINEL_TASK_KEY": STRONG_KEY}
    with pytest.raises(ImproperlyConfigured, match="SENTINEL_TASK_KEY equals"):
        config.load(same, tmp_path)
    other = config.load({**same, "SENTINEL_TASK_KEY": "another-" + STRONG_KEY}, tmp_path)
    assert other.task_key == "another-" + STRONG_KEY
