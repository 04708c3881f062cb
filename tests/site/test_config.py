"""Settings come from the environment; malformed values stop start-up with one clear line."""

import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from sentinel_site import config

ROOT = Path(__file__).resolve().parents[2]
# With SENTINEL_DEBUG off (the default) a key is required (tests/site/test_production_settings).
KEY = {"SENTINEL_SECRET_KEY": "tests-only-" + "k" * 50}


def test_defaults_give_sqlite_in_wal_mode_and_orm_broker(tmp_path: Path) -> None:
    cfg = config.load(KEY, tmp_path)
    assert cfg.database["ENGINE"] == "django.db.backends.sqlite3"
    assert cfg.database["NAME"] == str(tmp_path / "var" / "sentinel.sqlite3")
    assert "journal_mode=WAL" in cfg.database["OPTIONS"]["init_command"]
    assert cfg.database["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
    assert cfg.broker_url == "orm://default"
    assert cfg.history_retention_seconds == 30 * 86400


def test_postgres_url_is_split_into_django_settings(tmp_path: Path) -> None:
    cfg = config.load({**KEY, "DATABASE_URL": "postgres://u:p%40ss@db:5433/sentinel"}, tmp_path)
    assert cfg.database["NAME"] == "sentinel"
    assert cfg.database["PASSWORD"] == "p@ss"
    assert (cfg.database["HOST"], cfg.database["PORT"]) == ("db", "5433")
    # Kept connections are checked before reuse (tests/site/test_postgres_restart.py).
    assert cfg.database["CONN_HEALTH_CHECKS"] is True


@pytest.mark.parametrize(
    ("name", "value", "fragment"),
    [
        ("DATABASE_URL", "mysql://x/y", "scheme 'mysql' is not supported"),
        ("SENTINEL_PROMETHEUS_URL", "prometheus:9090", "is not a http or https URL"),
        ("SENTINEL_HISTORY_RETENTION", "thirty days", "is not a duration"),
        ("SENTINEL_BROKER_URL", "amqp://q", "is not a redis or rediss URL"),
        ("SENTINEL_DEBUG", "maybe", "is not a boolean"),
        ("SENTINEL_METRICS_ADDR", "9100", "is not an address"),
        ("SENTINEL_METRICS_ADDR", "0.0.0.0:http", "is not an address"),
        ("SENTINEL_DISPATCH_AHEAD", "soon", "is not a number of seconds"),
        ("SENTINEL_DISPATCH_AHEAD", "6", "at most 5"),
        ("SENTINEL_CLAIM_TIMEOUT", "2m", "is not a whole number of seconds"),
        ("SENTINEL_CLAIM_TIMEOUT", "0", "from 1 to 3600"),
        ("SENTINEL_CLAIM_TIMEOUT", "7200", "from 1 to 3600"),
        # 4 x SENTINEL_PROMETHEUS_TIMEOUT (5 s): half the claim is the task's time limit.
        ("SENTINEL_CLAIM_TIMEOUT", "19", "too short: at least 20 s"),
    ],
)
def test_malformed_setting_names_the_variable(
    tmp_path: Path, name: str, value: str, fragment: str
) -> None:
    with pytest.raises(ImproperlyConfigured, match=fragment) as info:
        config.load({name: value}, tmp_path)
    assert name in str(info.value)


def test_dispatch_look_ahead_defaults_to_half_a_second(tmp_path: Path) -> None:
    assert config.load(KEY, tmp_path).dispatch_ahead == 0.5
    assert config.load({**KEY, "SENTINEL_DISPATCH_AHEAD": "0"}, tmp_path).dispatch_ahead == 0
    assert config.load({**KEY, "SENTINEL_DISPATCH_AHEAD": "2s"}, tmp_path).dispatch_ahead == 2


def test_the_claim_bounds_the_task_time_limit(tmp_path: Path) -> None:
    default = config.load(KEY, tmp_path)
    assert (default.claim_timeout, default.task_time_limit) == (120, 60)
    short = config.load({**KEY, "SENTINEL_CLAIM_TIMEOUT": "21s"}, tmp_path)
    assert (short.claim_timeout, short.task_time_limit) == (21, 10)
    long = config.load({**KEY, "SENTINEL_CLAIM_TIMEOUT": "3600"}, tmp_path)
    assert long.task_time_limit == 60
    # The minimum follows what one task has to hold: a query, and the look-ahead.
    quick = {**KEY, "SENTINEL_PROMETHEUS_TIMEOUT": "1", "SENTINEL_CLAIM_TIMEOUT": "4"}
    assert config.load(quick, tmp_path).task_time_limit == 2
    with pytest.raises(ImproperlyConfigured, match="at least 10 s"):
        config.load({**quick, "SENTINEL_DISPATCH_AHEAD": "5"}, tmp_path)
    # The default stands with any Prometheus timeout: a longer claim would not lift the limit.
    slow = {**KEY, "SENTINEL_PROMETHEUS_TIMEOUT": "60"}
    assert config.load(slow, tmp_path).task_time_limit == 60
    with pytest.raises(ImproperlyConfigured, match="at least 120 s"):
        config.load({**slow, "SENTINEL_CLAIM_TIMEOUT": "119"}, tmp_path)


def test_django_q_follows_the_claim() -> None:
    # Derived in settings, in one place: the time limit half the claim, redelivery at its end.
    code = (
        "import django; django.setup(); from django.conf import settings; "
        "print(settings.Q_CLUSTER['timeout'], settings.Q_CLUSTER['retry'])"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={
            **KEY,
            "DJANGO_SETTINGS_MODULE": "sentinel_site.settings",
            "SENTINEL_CLAIM_TIMEOUT": "30",
            "PATH": "/usr/bin:/bin",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["15", "30"]


def test_operator_metrics_listen_on_loopback_unless_told_otherwise(tmp_path: Path) -> None:
    default = config.load(KEY, tmp_path)
    assert (default.metrics_address, default.metrics_port) == ("127.0.0.1", 9100)
    deployed = config.load({**KEY, "SENTINEL_METRICS_ADDR": "0.0.0.0:9200"}, tmp_path)
    assert (deployed.metrics_address, deployed.metrics_port) == ("0.0.0.0", 9200)


def test_password_is_not_echoed_in_errors(tmp_path: Path) -> None:
    with pytest.raises(ImproperlyConfigured) as info:
        config.load({"DATABASE_URL": "postgres://u:secret@db:5432/"}, tmp_path)
    assert "secret" not in str(info.value)


def test_manage_py_reports_one_line_without_traceback() -> None:
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={"SENTINEL_HISTORY_RETENTION": "soon", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert lines == [
        "rollout-sentinel: configuration error: SENTINEL_HISTORY_RETENTION='soon' is not a "
        "duration; use a positive number with s, m, h or d, e.g. 30d."
    ]
