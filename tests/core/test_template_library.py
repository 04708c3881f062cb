"""docs/templates.md, "The library": the shipped cluster templates resolve into valid specs.

Server-free: each template of deploy/components/template-library, as the component lists it,
is resolved for a five-line analysis (``resolve``, then ``parse_spec`` as the operator does),
with a hostile value for every argument it declares without a default; the value stays inside
its string literal. What each template measures on real pods is
tests/realcluster/test_template_library.py.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from sentinel_core.conditions import Reason
from sentinel_core.spec import parse_spec
from sentinel_core.templates import Template, TemplateError, TemplateRef, resolve
from testkit.paths import DEPLOY_DIR

LIBRARY = DEPLOY_DIR / "components" / "template-library"
HOSTILE = '"} or vector(1) #'
ESCAPED = '\\"} or vector(1) #'


def _library() -> dict[str, dict[str, Any]]:
    kustomization = yaml.safe_load((LIBRARY / "kustomization.yaml").read_text())
    assert kustomization["kind"] == "Component"
    objects = [yaml.safe_load((LIBRARY / f).read_text()) for f in kustomization["resources"]]
    return {o["metadata"]["name"]: o for o in objects}


TEMPLATES = _library()


def _required(name: str) -> list[str]:
    return [a["name"] for a in TEMPLATES[name]["spec"].get("args", []) if "default" not in a]


def _five_lines(name: str, args: dict[str, str]) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "target": {"name": "checkout"},
        "templates": [{"name": name, "clusterScope": True}],
    }
    if args:
        spec["args"] = [{"name": k, "value": v} for k, v in args.items()]
    return spec


def _resolve(name: str, args: dict[str, str]) -> dict[str, Any]:
    ref = TemplateRef(name, cluster_scope=True)
    template = Template(ref, 1, TEMPLATES[name]["spec"])
    return resolve(_five_lines(name, args), "shop", {ref: template}).spec


def test_the_library_is_five_cluster_templates_of_an_error_and_a_latency_guard() -> None:
    assert sorted(TEMPLATES) == [
        "envoy-gateway",
        "http-server",
        "ingress-nginx",
        "istio",
        "linkerd",
    ]
    for name, template in TEMPLATES.items():
        assert template["apiVersion"] == "sentinel.example.com/v1alpha1"
        assert template["kind"] == "ClusterRolloutAnalysisTemplate"
        assert "namespace" not in template["metadata"]
        metrics = [m["name"] for m in template["spec"]["metrics"]]
        assert len(metrics) == 2 and "error" in metrics[0] and "latency" in metrics[1], name
        # The interval, failure limit and false-pause rate are the analysis's to choose.
        assert not {"interval", "failureLimit", "falsePauseRate"} & set(template["spec"]), name


def _strings(metric: dict[str, Any]) -> str:
    strings = [metric.get("query", ""), *(metric.get("sequential") or {}).values()]
    strings.append((metric.get("minSamples") or {}).get("query", ""))
    return " ".join(s for s in strings if isinstance(s, str))


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_each_template_resolves_for_a_five_line_analysis(name: str) -> None:
    resolved = _resolve(name, dict.fromkeys(_required(name), "checkout-api"))
    parsed = parse_spec(resolved)
    assert [m.name for m in parsed.metrics] == [
        m["name"] for m in TEMPLATES[name]["spec"]["metrics"]
    ]
    assert "{{" not in yaml.safe_dump(resolved["metrics"])
    for metric in resolved["metrics"]:
        # Each guard is narrowed to the analysis's service: its namespace or its argument.
        joined = _strings(metric)
        assert '"shop"' in joined or '"checkout-api"' in joined, (name, joined)


@pytest.mark.parametrize("name", sorted(n for n in TEMPLATES if _required(n)))
def test_a_hostile_value_is_a_label_value_or_refused_never_promql(name: str) -> None:
    """In a query the value is escaped inside its literal; a sequential selector (whose
    pattern admits no escaped quote) refuses it as InvalidTemplate."""
    required = _required(name)
    sequential = any("sequential" in m for m in TEMPLATES[name]["spec"]["metrics"])
    if sequential:
        with pytest.raises(TemplateError) as raised:
            _resolve(name, dict.fromkeys(required, HOSTILE))
        assert raised.value.reason == Reason.INVALID_TEMPLATE
        return
    resolved = _resolve(name, dict.fromkeys(required, HOSTILE))
    parse_spec(resolved)
    for metric in resolved["metrics"]:
        joined = _strings(metric)
        assert ESCAPED in joined, (name, joined)
        assert HOSTILE not in joined.replace(ESCAPED, ""), (name, joined)


@pytest.mark.parametrize("name", sorted(n for n in TEMPLATES if _required(n)))
def test_a_template_without_its_required_argument_is_missing_argument(name: str) -> None:
    with pytest.raises(TemplateError) as raised:
        _resolve(name, {})
    assert raised.value.reason == Reason.MISSING_ARGUMENT
    assert f"ClusterRolloutAnalysisTemplate {name} needs the argument" in raised.value.message


def test_the_mesh_templates_read_the_target_and_namespace_without_arguments() -> None:
    istio = _resolve("istio", {})["metrics"]
    assert istio[0]["sequential"]["bad"] == (
        'istio_requests_total{reporter="destination", destination_workload_namespace="shop", '
        'destination_workload="checkout", response_code=~"5.."}'
    )
    linkerd = _resolve("linkerd", {})["metrics"]
    assert linkerd[1]["sequential"]["histogram"] == (
        'response_latency_ms{direction="inbound", namespace="shop", deployment="checkout"}'
    )
    nginx = _resolve("ingress-nginx", {"service": "checkout", "namespaceLabel": "namespace"})
    assert 'namespace="shop", service="checkout"' in nginx["metrics"][0]["query"]
    # A label name that is not one is refused, not written into the query.
    with pytest.raises(TemplateError) as raised:
        _resolve("ingress-nginx", {"service": "checkout", "namespaceLabel": 'x="y"} or vector(1)'})
    assert raised.value.reason == Reason.INVALID_TEMPLATE
