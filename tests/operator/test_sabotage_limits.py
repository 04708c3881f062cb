"""Sabotage item 18: Prometheus answers 200 with a 200 MB body.

The read is capped (``SENTINEL_PROMETHEUS_MAX_BYTES``, default 4 MiB): the client stops reading,
the analysis goes ``Ready=False/MetricsUnavailable`` saying the answer was too large, nothing is
counted, the operator backs off, and no worker process grows past a few hundred MB. The worker
processes' peak resident size is read from ``/proc/<pid>/status`` (``VmHWM``) of every process
below the operator.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from sentinel_cluster import kube
from sentinel_core.measurement import MeasurementError
from sentinel_operator.prometheus import DEFAULT_MAX_BYTES, PrometheusClient
from sentinel_site import config
from testkit.clusters import kubectl_apply
from testkit.devcluster import DevCluster
from testkit.fault_proxy import FaultProxy
from testkit.manifests import analysis_manifest, deployment_manifest, gauge_metric
from testkit.metrics_app import GaugeSetter
from testkit.observe import condition, deployment_paused, wait_condition, wait_rows
from testkit.operator import OperatorProcess

NAME = "checkout"
HUGE = 200 * 1024 * 1024
# "No worker grows past a few hundred MB": a worker that read the whole answer would hold the
# 200 MB body plus its decoded JSON (several times that).
RSS_LIMIT = 300 * 1024 * 1024


def _descendants(pid: int) -> list[int]:
    """Return the pids of every process below ``pid`` (django-q2's sentinel and its workers)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name is in parentheses and may hold spaces; the ppid follows the state.
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    found: list[int] = []
    pending = [pid]
    while pending:
        current = pending.pop()
        for child in children.get(current, []):
            found.append(child)
            pending.append(child)
    return found


def _peak_rss(pid: int) -> int:
    """Return the peak resident size (``VmHWM``) of ``pid`` in bytes, 0 if it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


@pytest.mark.parametrize("declare_length", [False, True], ids=["streamed", "content-length"])
def test_client_stops_reading_at_the_cap(fault_proxy: FaultProxy, declare_length: bool) -> None:
    """The client refuses a 200 MB answer quickly, with a typed error naming the size."""
    fault_proxy.huge(HUGE, declare_length=declare_length)
    client = PrometheusClient(fault_proxy.url, timeout=10.0)

    started = time.monotonic()
    result = client.measure("p99", "up")
    took = time.monotonic() - started

    assert result.error is MeasurementError.UNAVAILABLE
    assert result.value is None
    assert "too large" in result.message and "4 MiB" in result.message
    # Reading 200 MB through the proxy takes seconds; stopping at 4 MiB takes a fraction.
    print(
        f"200 MB answer ({'declared' if declare_length else 'streamed'}): refused in {took:.3f} s"
    )
    assert took < 3.0, took


def test_configured_cap_applies_to_ordinary_answers(fault_proxy: FaultProxy) -> None:
    """A cap below an ordinary answer's size refuses it too: the cap is the configured one."""
    fault_proxy.huge(64 * 1024)
    assert PrometheusClient(fault_proxy.url, max_bytes=200 * 1024).measure("m", "up").error is (
        MeasurementError.UNAVAILABLE
    )
    small = PrometheusClient(fault_proxy.url, max_bytes=16 * 1024).measure("m", "up")
    assert small.error is MeasurementError.UNAVAILABLE
    assert "more than 16 KiB" in small.message
    assert DEFAULT_MAX_BYTES == 4 * 1024 * 1024


def test_deeply_nested_answer_is_unavailable(fault_proxy: FaultProxy) -> None:
    """JSON nested 100,000 deep (json.loads raises RecursionError) is an unusable body."""
    fault_proxy.body(b'{"status":"success","data":' + b"[" * 100_000)

    result = PrometheusClient(fault_proxy.url).measure("p99", "up")

    assert result.error is MeasurementError.UNAVAILABLE
    assert result.message == "Prometheus answered with invalid JSON (nested too deeply)"


def test_answer_still_arriving_after_the_timeout_is_unavailable(fault_proxy: FaultProxy) -> None:
    """The timeout bounds the whole answer, not each read: a dripping body is given up on.

    The clock is the client's seam: it jumps by 2 s per look, so a 1 MiB answer (16 reads of
    64 KiB, each arriving at once) outlasts a 5 s timeout without the test waiting for it.
    """
    ticks = iter(range(0, 10_000, 2))
    fault_proxy.huge(1024 * 1024)
    client = PrometheusClient(fault_proxy.url, timeout=5.0, clock=lambda: float(next(ticks)))

    result = client.measure("p99", "up")

    assert result.error is MeasurementError.UNAVAILABLE
    assert result.message == f"Prometheus at 127.0.0.1:{fault_proxy.port} did not answer within 5 s"


def test_cap_setting(tmp_path: Path) -> None:
    """SENTINEL_PROMETHEUS_MAX_BYTES: 4 MiB by default, a whole number of bytes otherwise."""
    key = {"SENTINEL_SECRET_KEY": "a-test-key"}
    assert config.load(key, tmp_path).prometheus_max_bytes == 4 * 1024 * 1024
    loaded = config.load({**key, "SENTINEL_PROMETHEUS_MAX_BYTES": "65536"}, tmp_path)
    assert loaded.prometheus_max_bytes == 65536
    for bad in ("0", "4MiB", "-1", str(2 * 1024**3)):
        with pytest.raises(ImproperlyConfigured, match="SENTINEL_PROMETHEUS_MAX_BYTES"):
            config.load({**key, "SENTINEL_PROMETHEUS_MAX_BYTES": bad}, tmp_path)


def test_huge_answer_is_metrics_unavailable_and_workers_stay_small(
    operator: OperatorProcess,
    devcluster: DevCluster,
    kube_client: kube.KubeClient,
    namespace: str,
    gauge: GaugeSetter,
    fault_proxy: FaultProxy,
    case: str,
) -> None:
    """Item 18 end to end: capped read, MetricsUnavailable, nothing counted, backoff, small RSS."""
    gauge(0.9)
    kubectl_apply(
        devcluster,
        deployment_manifest(NAME, namespace),
        analysis_manifest(
            NAME, namespace, metrics=[gauge_metric(case, 0.5)], failure_limit=2, interval="5s"
        ),
    )
    first = wait_condition(kube_client, namespace, NAME, "Ready", "Evaluating", timeout=10)
    assert first["status"]["failures"] == 1

    fault_proxy.huge(HUGE)
    fault_proxy.reset()
    broke_at = time.monotonic()
    down = wait_condition(kube_client, namespace, NAME, "Ready", "MetricsUnavailable", timeout=10)
    ready = condition(down, "Ready")
    assert ready["status"] == "False"
    assert "too large" in ready["message"], ready
    assert down["status"]["failures"] == 1

    # Stay in the outage long enough for several backed-off attempts (5 s, 10 s, ...).
    time.sleep(max(0.0, 20.0 - (time.monotonic() - broke_at)))
    attempts = fault_proxy.query_count
    still = kube_client.request("GET", kube.analysis_path(namespace, NAME))
    assert condition(still, "Ready")["reason"] == "MetricsUnavailable"
    assert still["status"]["failures"] == 1
    assert not deployment_paused(kube_client, namespace)
    # Healthy, a 5 s interval asks 4 times in 20 s; backing off from 5 s asks at most 3.
    assert 1 <= attempts <= 3, attempts

    processes = _descendants(operator.pid)
    assert len(processes) >= 2, processes  # the django-q2 sentinel and at least one worker
    peaks = {pid: _peak_rss(pid) for pid in [operator.pid, *processes]}
    biggest = max(peaks.values())
    print(f"peak RSS during 200 MB answers: {sorted(p // 2**20 for p in peaks.values())} MiB")
    assert 0 < biggest < RSS_LIMIT, peaks

    rows = wait_rows(
        operator,
        namespace,
        NAME,
        lambda rows: any(row["error_reason"] == "MetricsUnavailable" for row in rows),
        timeout=5,
        what="an Error row for the huge answer",
    )
    errors = [row for row in rows if row["outcome"] == "Error"]
    assert errors and all(row["failures_after"] == 1 for row in errors)
    assert all("too large" in row["error_message"] for row in errors), errors

    gauge(0.1)
    fault_proxy.pass_through()
    back = wait_condition(kube_client, namespace, NAME, "Ready", "Evaluating", timeout=65)
    assert (back["status"]["lastVerdict"], back["status"]["failures"]) == ("Pass", 0)
