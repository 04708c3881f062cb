"""A worker that cannot build its Kubernetes client says so in one line and keeps the claim.

Each django-q2 worker builds its client on first use (``tasks.reconciler``). When the
kubeconfig cannot be read at that moment (seen in the soak: the launcher rewrites it around an
API-server restart), the task logs one error without a traceback and the analysis waits for its
claim to run out (docs/operator.md#due-time-dispatch), instead of a django-q2 traceback — or,
inside a batch, nothing at all.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from sentinel_operator import tasks


@pytest.fixture
def unreadable_kubeconfig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    missing = tmp_path / "kubeconfig"
    monkeypatch.setenv("KUBECONFIG", str(missing))
    monkeypatch.setattr(tasks, "_reconciler", None)  # this process has built none yet
    return missing


def test_a_client_that_cannot_be_built_is_one_error_line(
    unreadable_kubeconfig: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="sentinel_operator.tasks"):
        outcome = tasks.reconcile_one("shop", "checkout", "2026-12-03T12:00:00+00:00", "uid-1")

    assert outcome == "error"
    [record] = caplog.records
    assert record.exc_info is None
    message = record.getMessage()
    assert message.startswith("reconcile shop/checkout not started: cannot load Kubernetes")
    assert message.endswith("retried when its claim runs out")


def test_a_batch_logs_each_member_it_could_not_start(
    unreadable_kubeconfig: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Due in the past: the batch waits on the clock for a member's due time. Claimed for two
    # more minutes: a claim about to run out is given back unstarted (docs/operator.md#claims).
    members = [("shop", name, f"uid-{name}", "2026-01-01T12:00:00+00:00") for name in ("a", "b")]
    claimed_until = datetime.now(UTC) + timedelta(minutes=2)
    with caplog.at_level(logging.ERROR, logger="sentinel_operator.tasks"):
        results = tasks.reconcile_batch_task(members, claimed_until.isoformat())

    assert results == ["error", "error"]
    assert [r.getMessage().split(":")[0] for r in caplog.records] == [
        "reconcile shop/a not started",
        "reconcile shop/b not started",
    ]
