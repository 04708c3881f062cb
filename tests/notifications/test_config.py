"""SENTINEL_NOTIFY_CONFIG: the file's shape, and one clear line for every mistake.

docs/notifications.md describes the file; the line names file, channel and field, as the
providers file's does (``sentinel_config.files``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from notifications.channels import redact
from notifications.config import load
from sentinel_core.notify import DEFAULT_EVENTS, NotifyEvent
from testkit.paths import MANAGE, REPO_ROOT
from testkit.site_env import with_defaults

SECRET = "xoxb-123456789-very-secret-token"


def write(tmp_path: Path, text: str) -> dict[str, str]:
    path = tmp_path / "notify.yaml"
    path.write_text(text)
    return {"SENTINEL_NOTIFY_CONFIG": str(path)}


def test_channels_and_defaults(tmp_path: Path) -> None:
    env = write(
        tmp_path,
        f"""
channels:
  - name: payments-slack
    url: slack://{SECRET}/#payments
  - name: ops-mail
    url: mailto://127.0.0.1:2525?from=sentinel@example.com&to=ops@example.com
    events: [Paused, Failing]
    default: true
""",
    )
    conf = load({**env, "SENTINEL_NOTIFY_OUTAGE_AFTER": "2m"})
    slack, mail = conf.channels
    assert (slack.name, slack.events, slack.default) == ("payments-slack", DEFAULT_EVENTS, False)
    assert NotifyEvent.FAILING not in slack.events
    assert mail.events == {NotifyEvent.PAUSED, NotifyEvent.FAILING} and mail.default
    assert conf.outage_after_seconds == 120
    assert conf.names == {"payments-slack", "ops-mail"}
    # Routing: a default channel for everyone, a named one only where spec.notify names it.
    assert [c.name for c in conf.route(NotifyEvent.PAUSED, [])] == ["ops-mail"]
    assert [c.name for c in conf.route(NotifyEvent.RESUMED, ["payments-slack"])] == [
        "payments-slack"
    ]
    # What may be shown of a URL holds no token.
    assert SECRET not in slack.redacted and SECRET not in repr(slack)
    assert redact(f"failed: slack://{SECRET}/#payments and {SECRET}", slack.url).count(SECRET) == 0


def test_unconfigured_means_no_channels_and_no_check() -> None:
    conf = load({})
    assert conf.channels == () and conf.names is None
    assert conf.outage_after_seconds == 300


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("channels: [", "not valid YAML at line 1"),
        ("- a\n", "field (top level): Input should be a valid dictionary"),
        ("channels: {a: 1}", "field channels: Input should be a valid list"),
        (
            "channels: [{name: Bad_Name, url: 'json://h/'}]",
            "channel 'Bad_Name' field name: String should match pattern",
        ),
        ("channels: [{url: 'json://h/'}]", "channel #1 field name: Field required"),
        ("channels: [{name: a, url: 'nope://h/x'}]", "Apprise does not accept this nope:// URL"),
        (
            "channels: [{name: a, url: 'no scheme'}]",
            "channel 'a' field url: must be an Apprise URL",
        ),
        (
            "channels: [{name: a, url: 'json://h/', events: [Paused, Bogus]}]",
            "channel 'a' field events: unknown event 'Bogus'",
        ),
        (
            "channels: [{name: a, url: 'json://h/', default: 'yes'}]",
            "channel 'a' field default: Input should be a valid boolean",
        ),
        (
            "channels: [{name: a, url: 'json://h/', colour: red}]",
            "channel 'a' field colour: Extra inputs are not permitted",
        ),
        (
            "channels: [{name: a, url: 'json://h/'}, {name: a, url: 'json://h/'}]",
            "channel 'a' field name: duplicate, already channel #1",
        ),
    ],
)
def test_mistakes_are_one_sentence(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(ImproperlyConfigured) as caught:
        load(write(tmp_path, text))
    assert str(caught.value).startswith(f"SENTINEL_NOTIFY_CONFIG {tmp_path / 'notify.yaml'}: ")
    assert expected in str(caught.value)
    assert "\n" not in str(caught.value)


def test_missing_file_and_bad_settings(tmp_path: Path) -> None:
    with pytest.raises(ImproperlyConfigured, match="cannot read it: No such file"):
        load({"SENTINEL_NOTIFY_CONFIG": str(tmp_path / "absent.yaml")})
    with pytest.raises(ImproperlyConfigured, match="SENTINEL_NOTIFY_OUTAGE_AFTER='soon'"):
        load({"SENTINEL_NOTIFY_OUTAGE_AFTER": "soon"})
    with pytest.raises(ImproperlyConfigured, match="SENTINEL_PUBLIC_URL"):
        load({"SENTINEL_PUBLIC_URL": "ftp://x"})


def test_start_up_stops_with_one_line_and_no_secret(tmp_path: Path) -> None:
    env = write(tmp_path, f"channels: [{{name: a, url: 'nope://{SECRET}@host/'}}]")
    done = subprocess.run(
        [sys.executable, str(MANAGE), "check"],
        env=with_defaults({**os.environ, **env}),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("rollout-sentinel: configuration error: SENTINEL_NOTIFY_CONFIG ")
    assert "nope://" in lines[0] and SECRET not in done.stderr + done.stdout
