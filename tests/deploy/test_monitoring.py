"""deploy/monitoring: the Prometheus Operator objects and the alerting rules (issue 13 item 9).

The PrometheusRule's ``spec.groups`` is the one source of the rules: it is extracted from the
rendered kustomization into a plain rules file and run through the real ``promtool check
rules`` and ``promtool test rules`` (Debian's ``prometheus`` package) with the cases in
``monitoring_rules_test.yaml``. The monitors are checked against what the overlays deploy: the
Pods, Service, ports, Host names and Secret key they name exist, and every metric the rules use
is one the operator really exposes.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from testkit.kubectl import kubectl_binary
from tests.deploy.kustomize import DEPLOY, HOME, OVERLAYS

RULE_TESTS = Path(__file__).with_name("monitoring_rules_test.yaml")


def _kustomize(directory: str) -> list[dict[str, Any]]:
    text = subprocess.run(
        [kubectl_binary(), "kustomize", str(DEPLOY / directory)],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    return [doc for doc in yaml.safe_load_all(text) if doc]


def _one(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [o for o in objects if o["kind"] == kind and name in (None, o["metadata"]["name"])]
    assert len(found) == 1, f"{kind} {name}: {len(found)} found"
    return found[0]


def _promtool(*args: str, cwd: Path) -> str:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.fail("promtool is missing: `make debs` installs Debian's prometheus package.")
    result = subprocess.run([promtool, *args], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def monitoring() -> list[dict[str, Any]]:
    return _kustomize("monitoring")


def _rule_groups(monitoring: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return list(_one(monitoring, "PrometheusRule")["spec"]["groups"])


def test_rules_pass_promtool_check_and_unit_tests(
    monitoring: list[dict[str, Any]], tmp_path: Path
) -> None:
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": _rule_groups(monitoring)}))
    shutil.copy(RULE_TESTS, tmp_path / RULE_TESTS.name)

    checked = _promtool("check", "rules", "rules.yaml", cwd=tmp_path)
    assert "SUCCESS: 6 rules found" in checked
    _promtool("test", "rules", RULE_TESTS.name, cwd=tmp_path)

    # Every alert has at least one unit-test case.
    alerts = {rule["alert"] for group in _rule_groups(monitoring) for rule in group["rules"]}
    cases = yaml.safe_load(RULE_TESTS.read_text())["tests"]
    tested = {check["alertname"] for case in cases for check in case["alert_rule_test"]}
    assert tested == alerts


def test_promtool_fails_a_rule_that_breaks_its_test(
    monitoring: list[dict[str, Any]], tmp_path: Path
) -> None:
    # The unit tests can fail: a paused rollout that no longer alerts is caught.
    groups = _rule_groups(monitoring)
    for rule in groups[0]["rules"]:
        if rule["alert"] == "SentinelRolloutPaused":
            rule["expr"] = rule["expr"].replace("== 1", "== 2")
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}))
    shutil.copy(RULE_TESTS, tmp_path / RULE_TESTS.name)
    result = subprocess.run(
        ["promtool", "test", "rules", RULE_TESTS.name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "SentinelRolloutPaused" in result.stdout + result.stderr


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_monitors_find_what_the_overlay_deploys(
    monitoring: list[dict[str, Any]], overlay: str
) -> None:
    deployed = _kustomize(f"overlays/{overlay}")
    assert {o["metadata"]["namespace"] for o in monitoring} == {HOME}

    # The operator's Pods, their metrics port, reachable from the monitoring namespace.
    pod_monitor = _one(monitoring, "PodMonitor")
    operator = _one(deployed, "Deployment", "rollout-sentinel-operator")
    template_labels = operator["spec"]["template"]["metadata"]["labels"]
    assert pod_monitor["spec"]["selector"]["matchLabels"].items() <= template_labels.items()
    (endpoint,) = pod_monitor["spec"]["podMetricsEndpoints"]
    (container,) = operator["spec"]["template"]["spec"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    env = {e["name"]: e.get("value") for e in container.get("env", [])}
    assert env["SENTINEL_METRICS_ADDR"] == f"0.0.0.0:{ports[endpoint['port']]}"
    policy = _one(deployed, "NetworkPolicy", "rollout-sentinel-metrics-ingress")
    assert policy["spec"]["ingress"][0]["ports"] == [
        {"protocol": "TCP", "port": ports[endpoint["port"]]}
    ]

    # The web app's Service (the only one selected), scraped through its name with the token.
    service_monitor = _one(monitoring, "ServiceMonitor")
    wanted = service_monitor["spec"]["selector"]["matchLabels"].items()
    services = [o for o in deployed if o["kind"] == "Service"]
    selected = [s for s in services if wanted <= s["metadata"].get("labels", {}).items()]
    assert [s["metadata"]["name"] for s in selected] == ["rollout-sentinel-web"]
    (endpoint,) = service_monitor["spec"]["endpoints"]
    service_ports = {p["name"]: p["port"] for p in selected[0]["spec"]["ports"]}
    address = next(
        r["replacement"] for r in endpoint["relabelings"] if r["targetLabel"] == "__address__"
    )
    host, port = address.rsplit(":", 1)
    assert host == f"rollout-sentinel-web.{HOME}.svc"
    assert int(port) == service_ports[endpoint["port"]]
    config = _one(deployed, "ConfigMap")
    assert host in config["data"]["SENTINEL_ALLOWED_HOSTS"].split(",")
    assert endpoint["authorization"]["credentials"] == {
        "name": "rollout-sentinel",
        "key": "SENTINEL_METRICS_TOKEN",
    }
    web = _one(deployed, "Deployment", "rollout-sentinel-web")
    (web_container,) = web["spec"]["template"]["spec"]["containers"]
    assert {"secretRef": {"name": "rollout-sentinel", "optional": True}} in web_container["envFrom"]


@pytest.mark.django_db
def test_every_metric_the_rules_use_is_exposed(monitoring: list[dict[str, Any]]) -> None:
    from analyses.models import Analysis, AnalysisMetric, Evaluation, MetricResult
    from sentinel_operator.metrics import operator_metrics, scrape

    now = datetime.now(UTC)
    analysis = Analysis.objects.create(
        namespace="shop", name="checkout", uid=str(uuid.uuid4()), created_at=now
    )
    AnalysisMetric.objects.create(analysis=analysis, name="latency", query="q", max_value=0.5)
    evaluation = Evaluation.objects.create(
        analysis=analysis, started_at=now, finished_at=now, outcome="Pass"
    )
    MetricResult.objects.create(
        evaluation=evaluation, name="latency", value=0.1, max_value=0.5, verdict="Pass"
    )
    operator_metrics()
    exposed = {
        line.split(" ")[2] for line in scrape().decode().splitlines() if line.startswith("# TYPE ")
    }
    histograms = {f"{name}_bucket" for name in exposed}
    expressions = " ".join(
        rule["expr"] for group in _rule_groups(monitoring) for rule in group["rules"]
    )
    used = set(re.findall(r"\bsentinel_[a-z_]+", expressions))
    assert used, "the rules use no sentinel_ metric"
    missing = used - exposed - histograms
    # Counters are exposed as NAME_total with TYPE NAME.
    missing = {name for name in missing if name.removesuffix("_total") not in exposed}
    assert not missing, f"the rules use metrics the operator does not expose: {missing}"
