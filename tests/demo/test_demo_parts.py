"""The demo's parts on their own: traffic profile, status log, settings, child clean-up."""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import pytest
import yaml

from demo import manifests
from demo.app import sample_latency
from demo.children import Child
from demo.settings import DemoError, DemoSettings
from demo.status import Snapshot, describe_change, snapshot_of
from sentinel_core.spec import parse_spec
from testkit.processes import alive


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[int(q * (len(ordered) - 1))]


def test_healthy_traffic_stays_under_the_threshold_and_the_regression_exceeds_it() -> None:
    rng = random.Random(7)
    healthy = [sample_latency(rng, regressed=False) for _ in range(20_000)]
    regressed = [sample_latency(rng, regressed=True) for _ in range(20_000)]
    assert max(healthy) <= 0.2
    assert _quantile(healthy, 0.99) < 0.12
    slow_share = sum(1 for value in regressed if value > manifests.MAX_VALUE) / len(regressed)
    assert 0.02 < slow_share < 0.04
    assert 0.3 <= _quantile(regressed, 0.99) <= 0.45


def test_the_status_log_prints_state_changes_not_new_values() -> None:
    analysis = {
        "spec": {"failureLimit": 3},
        "status": {
            "lastVerdict": "Fail",
            "failures": 1,
            "metricResults": [{"name": "p99-latency", "value": "0.41234"}],
            "conditions": [{"type": "Ready", "status": "True", "reason": "Evaluating"}],
        },
    }
    first = snapshot_of(analysis, deployment_paused=False)
    assert first == Snapshot(True, "Fail", 1, 3, "0.412", "True/Evaluating", False)
    line = describe_change(None, first)
    assert line is not None and "failures=1/3" in line and "p99=0.412" in line

    analysis["status"]["metricResults"][0]["value"] = "0.5"  # type: ignore[index]
    assert describe_change(first, snapshot_of(analysis, deployment_paused=False)) is None
    paused = describe_change(first, snapshot_of(analysis, deployment_paused=True))
    assert paused is not None and "deployment=PAUSED" in paused
    assert describe_change(first, snapshot_of(None, False)) == "analysis not found"


def test_settings_default_to_the_story_and_reject_malformed_values(tmp_path: Path) -> None:
    settings = DemoSettings.from_env({}, tmp_path)
    assert settings.work_dir == tmp_path / "var" / "demo"
    assert (settings.web_port, settings.cluster_port) == (8000, None)
    assert (settings.regression_after, settings.interval, settings.rate_window) == (
        120.0,
        "10s",
        "1m",
    )
    assert settings.cluster == "dev"
    assert DemoSettings.from_env({"SENTINEL_DEMO_CLUSTER": "real"}, tmp_path).cluster == "real"
    for name, raw in [
        ("SENTINEL_DEMO_PORT", "eighty"),
        ("SENTINEL_DEMO_REGRESSION_AFTER", "-3"),
        ("SENTINEL_DEMO_INTERVAL", "10"),
        ("SENTINEL_DEMO_CLUSTER", "kind"),
    ]:
        with pytest.raises(DemoError, match=name):
            DemoSettings.from_env({name: raw}, tmp_path)


@pytest.mark.server
def test_stopping_a_child_also_stops_what_it_left_behind(tmp_path: Path) -> None:
    # sh forks a background sleep (same process group), then becomes the other sleep.
    child = Child(
        "sleeper",
        ["sh", "-c", "sleep 300 & echo $! > grandchild; exec sleep 300"],
        env=dict(os.environ),
        cwd=tmp_path,
        log=tmp_path / "sleeper.log",
    )
    child.start()
    pid_file = tmp_path / "grandchild"
    deadline = time.monotonic() + 10
    while not pid_file.exists() or not pid_file.read_text().strip():
        assert time.monotonic() < deadline, "the grandchild never started"
        time.sleep(0.05)
    grandchild = int(pid_file.read_text())
    child.stop(timeout=5)
    assert not child.running
    deadline = time.monotonic() + 5
    while alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(grandchild)


def test_the_demo_analysis_has_a_baseline_relative_metric_beside_the_fixed_one() -> None:
    documents = list(yaml.safe_load_all(manifests.workload(interval="10s", rate_window="1m")))
    (analysis,) = [d for d in documents if d["kind"] == "RolloutAnalysis"]
    parsed = parse_spec(analysis["spec"], strict=True)
    fixed, relative, _, _ = parsed.metrics
    assert (fixed.name, fixed.max_value, fixed.max_increase) == (
        manifests.METRIC,
        manifests.MAX_VALUE,
        None,
    )
    assert relative.name == manifests.RELATIVE_METRIC
    assert relative.max_value is None and relative.query == fixed.query
    assert relative.max_increase is not None and relative.max_increase.percent == 50
    assert relative.baseline is not None and relative.baseline.offset == "1m"
    assert relative.min_samples is not None and relative.min_samples.min == 100
    assert "[1m]" in relative.min_samples.query


def test_the_healthy_p99_stays_well_within_the_relative_limit() -> None:
    # Two healthy windows never differ by the 50 % that fails the relative metric.
    rng = random.Random(11)
    windows = [
        _quantile([sample_latency(rng, regressed=False) for _ in range(1_000)], 0.99)
        for _ in range(40)
    ]
    assert max(windows) < min(windows) * (1 + manifests.MAX_INCREASE_PERCENT / 100)
    regressed = _quantile([sample_latency(rng, regressed=True) for _ in range(1_000)], 0.99)
    assert regressed > max(windows) * (1 + manifests.MAX_INCREASE_PERCENT / 100)


def test_the_third_metric_compares_new_pods_with_old_ones() -> None:
    documents = list(yaml.safe_load_all(manifests.workload(interval="10s", rate_window="1m")))
    (analysis,) = [d for d in documents if d["kind"] == "RolloutAnalysis"]
    compared = parse_spec(analysis["spec"], strict=True).metrics[2]
    assert compared.name == manifests.COMPARE_METRIC and compared.compare is not None
    # Enough samples at the interval's step over lookback for minSamples per side, from one pod.
    assert compared.compare.lookback_seconds / 10 >= compared.compare.min_samples
    assert compared.compare.max_effect is not None
    assert compared.compare.by == "pod_template_hash"
    # Each pod's own series, as discovery labels it; the app's p99 is another job's.
    assert f'job="{manifests.PODS_JOB}"' in compared.query
    assert f'job="{manifests.APP_JOB}"' in manifests.query("1m")


def test_the_fourth_metric_judges_the_pods_error_rates_sequentially() -> None:
    documents = list(yaml.safe_load_all(manifests.workload(interval="10s", rate_window="1m")))
    (analysis,) = [d for d in documents if d["kind"] == "RolloutAnalysis"]
    judged = parse_spec(analysis["spec"], strict=True).metrics[3]
    assert judged.name == manifests.SEQUENTIAL_METRIC and judged.sequential is not None
    assert judged.sequential.by == "pod_template_hash"
    assert judged.sequential.max_increase == manifests.SEQUENTIAL_MAX_INCREASE / 100
    # The pods' own counters, as discovery labels them (testkit.pod_server serves them).
    for selector in (judged.sequential.bad, judged.sequential.total):
        assert selector is not None and f'job="{manifests.PODS_JOB}"' in selector
    assert judged.sequential.bad.startswith("http_request_errors_total{")
    assert judged.sequential.total.startswith("http_requests_total{")


def test_on_the_real_control_plane_the_pods_run_on_kwok_and_roll_one_at_a_time() -> None:
    documents = list(
        yaml.safe_load_all(manifests.workload(interval="10s", rate_window="1m", pods_port=9100))
    )
    (deployment,) = [d for d in documents if d["kind"] == "Deployment"]
    spec = deployment["spec"]
    assert spec["replicas"] == manifests.REAL_REPLICAS
    assert spec["minReadySeconds"] == manifests.MIN_READY_SECONDS
    assert spec["strategy"]["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 0}
    pod = spec["template"]["spec"]
    assert pod["nodeSelector"] == {"type": "kwok"}
    assert {"name": "metrics", "containerPort": 9100} in pod["containers"][0]["ports"]
    # The release is slower than compare's maxEffect allows.
    slower = manifests.NEXT_POD_LATENCY / manifests.POD_LATENCY - 1
    assert slower > 2 * manifests.COMPARE_MAX_EFFECT / 100
