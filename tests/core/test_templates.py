"""docs/templates.md: resolving an analysis's templates, with the stable reasons of its errors.

``resolve`` is pure: these tests hand it templates as the reconciler would after reading them,
and check the resolved spec (what ``parse_spec`` then reads), the templates used, where each
metric came from, and each error's reason and message.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from sentinel_core.conditions import Reason
from sentinel_core.spec import InvalidSpecError, parse_spec
from sentinel_core.templates import (
    Template,
    TemplateError,
    TemplateRef,
    UsedTemplate,
    resolve,
    template_refs,
)

GOLDEN = TemplateRef("golden-signals", cluster_scope=True)
LOCAL = TemplateRef("latency")

_GOLDEN_SPEC: dict[str, Any] = {
    "args": [{"name": "service"}, {"name": "window", "default": "5m"}],
    "interval": "1m",
    "failureLimit": 2,
    "metrics": [
        {
            "name": "error-rate",
            "query": 'sum(rate(http_requests_total{service="{{ args.service }}",code=~"5.."}'
            "[{{ args.window }}]))",
            "maxValue": 0.01,
        },
        {
            "name": "errors-vs-old",
            "sequential": {
                "bad": 'http_requests_total{namespace="{{ namespace }}",code=~"5.."}',
                "total": 'http_requests_total{namespace="{{ namespace }}"}',
                "maxIncrease": {"percent": 10},
            },
        },
    ],
}
_LOCAL_SPEC: dict[str, Any] = {
    "metrics": [
        {
            "name": "p99",
            "query": "histogram_quantile(0.99, sum by (le) (rate("
            'http_request_duration_seconds_bucket{deployment="{{ target.name }}",'
            'kind="{{ target.kind }}"}[5m])))',
            "maxValue": 0.25,
        }
    ]
}


def _templates(**changes: Any) -> dict[TemplateRef, Template]:
    golden = {**copy.deepcopy(_GOLDEN_SPEC), **changes}
    return {
        GOLDEN: Template(GOLDEN, 4, golden),
        LOCAL: Template(LOCAL, 1, copy.deepcopy(_LOCAL_SPEC)),
    }


def _analysis(**changes: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "target": {"kind": "Deployment", "name": "checkout"},
        "templates": [{"name": "golden-signals", "clusterScope": True}],
        "args": [{"name": "service", "value": "checkout"}],
    }
    spec.update(changes)
    return {key: value for key, value in spec.items() if value is not None}


def _error(raw: dict[str, Any], templates: dict[TemplateRef, Template]) -> TemplateError:
    with pytest.raises(TemplateError) as caught:
        resolve(raw, "shop", templates)
    return caught.value


def test_an_analysis_of_a_few_lines_resolves_to_the_templates_metrics() -> None:
    resolved = resolve(_analysis(), "shop", _templates())
    assert resolved.spec == {
        "target": {"kind": "Deployment", "name": "checkout"},
        "metrics": [
            {
                "name": "error-rate",
                "query": 'sum(rate(http_requests_total{service="checkout",code=~"5.."}[5m]))',
                "maxValue": 0.01,
            },
            {
                "name": "errors-vs-old",
                "sequential": {
                    "bad": 'http_requests_total{namespace="shop",code=~"5.."}',
                    "total": 'http_requests_total{namespace="shop"}',
                    "maxIncrease": {"percent": 10},
                },
            },
        ],
        "interval": "1m",
        "failureLimit": 2,
    }
    assert resolved.templates == (UsedTemplate("golden-signals", True, 4),)
    assert resolved.templates[0].to_dict() == {
        "name": "golden-signals",
        "clusterScope": True,
        "generation": 4,
    }
    assert resolved.origins == {"error-rate": GOLDEN, "errors-vs-old": GOLDEN}
    parsed = parse_spec(resolved.spec)
    assert [m.name for m in parsed.metrics] == ["error-rate", "errors-vs-old"]
    assert parsed.interval_seconds == 60
    assert parsed.failure_limit == 2


def test_templates_then_own_metrics_in_order_with_built_ins_and_the_analysis_s_own_values() -> None:
    own = {"name": "cpu", "query": "sum(rate(cpu_seconds_total[1m]))", "maxValue": 2}
    raw = _analysis(
        target={"kind": "StatefulSet", "name": "db"},
        templates=[{"name": "latency"}, {"name": "golden-signals", "clusterScope": True}],
        args=[{"name": "service", "value": "db"}, {"name": "window", "value": "10m"}],
        metrics=[own],
        interval="45s",
    )
    resolved = resolve(raw, "shop", _templates())
    names = [m["name"] for m in resolved.spec["metrics"]]
    assert names == ["p99", "error-rate", "errors-vs-old", "cpu"]
    assert 'deployment="db",kind="StatefulSet"' in resolved.spec["metrics"][0]["query"]
    assert "[10m]" in resolved.spec["metrics"][1]["query"]
    assert resolved.spec["interval"] == "45s"  # the analysis's own value wins
    assert resolved.spec["failureLimit"] == 2  # the template's, which the analysis leaves
    assert resolved.origins == {
        "p99": LOCAL,
        "error-rate": GOLDEN,
        "errors-vs-old": GOLDEN,
        "cpu": None,
    }
    assert [t.name for t in resolved.templates] == ["latency", "golden-signals"]


def test_an_analysis_without_templates_is_its_own_spec() -> None:
    raw = {"target": {"name": "checkout"}, "metrics": [{"name": "a", "query": "up", "maxValue": 1}]}
    resolved = resolve(raw, "shop", {})
    assert resolved.spec == raw
    assert resolved.templates == ()
    assert resolved.origins == {"a": None}
    assert template_refs(raw) == ()


def test_an_argument_named_like_a_built_in_does_not_override_it() -> None:
    templates = _templates(
        args=[
            {"name": "service"},
            {"name": "window", "default": "5m"},
            {"name": "namespace", "default": "other"},
        ],
    )
    raw = _analysis(
        args=[{"name": "service", "value": "x"}, {"name": "namespace", "value": "kube-system"}]
    )
    resolved = resolve(raw, "shop", templates)
    assert (
        resolved.spec["metrics"][1]["sequential"]["total"]
        == 'http_requests_total{namespace="shop"}'
    )


def test_a_missing_template_is_template_not_found_naming_it() -> None:
    error = _error(_analysis(), {})
    assert error.reason == Reason.TEMPLATE_NOT_FOUND
    assert error.message == "ClusterRolloutAnalysisTemplate golden-signals not found"
    error = _error(_analysis(templates=[{"name": "latency"}]), {})
    assert error.reason == Reason.TEMPLATE_NOT_FOUND
    assert error.message == "RolloutAnalysisTemplate latency not found in namespace shop"
    # The same name in the other scope is another template.
    error = _error(_analysis(templates=[{"name": "latency", "clusterScope": True}]), _templates())
    assert error.reason == Reason.TEMPLATE_NOT_FOUND


def test_a_missing_argument_names_the_template_and_the_argument() -> None:
    error = _error(_analysis(args=None), _templates())
    assert error.reason == Reason.MISSING_ARGUMENT
    assert error.message == (
        "ClusterRolloutAnalysisTemplate golden-signals needs the argument service, which "
        "spec.args does not give and the template has no default for"
    )


@pytest.mark.parametrize(
    ("raw_changes", "template_changes", "message"),
    [
        (
            {"metrics": [{"name": "error-rate", "query": "up", "maxValue": 1}]},
            {},
            "metric error-rate is defined twice: by ClusterRolloutAnalysisTemplate "
            "golden-signals and by the analysis",
        ),
        (
            {
                "templates": [
                    {"name": "golden-signals", "clusterScope": True},
                    {"name": "golden-signals"},
                ]
            },
            {},
            "metric error-rate is defined twice: by ClusterRolloutAnalysisTemplate "
            "golden-signals and by RolloutAnalysisTemplate golden-signals",
        ),
        (
            {},
            {"metrics": [{"name": "x", "query": "up{a='{{ args.nope }}'}", "maxValue": 1}]},
            "ClusterRolloutAnalysisTemplate golden-signals, metric x: uses {{ args.nope }}, "
            "which is neither an argument the template declares nor one of {{ namespace }}, "
            "{{ target.kind }}, {{ target.name }}",
        ),
        (
            {"args": [{"name": "service", "value": "a b"}]},
            {"metrics": [{"name": "x", "query": "{{ args.service }}_total", "maxValue": 1}]},
            "ClusterRolloutAnalysisTemplate golden-signals, metric x: query: {{ args.service }} "
            "stands outside a string literal, where its value 'a b' must be letters, digits, "
            "_, : and . only",
        ),
        (
            {"args": [{"name": "service", "value": "a`b"}]},
            {"metrics": [{"name": "x", "query": "up{a=`{{ args.service }}`}", "maxValue": 1}]},
            "ClusterRolloutAnalysisTemplate golden-signals, metric x: query: the value of "
            "{{ args.service }} holds a backtick and cannot be written inside the raw string "
            "`…` it stands in",
        ),
        (
            {},
            {"metrics": [{"name": "x", "query": "up{a='{{ args.service'}", "maxValue": 1}]},
            "ClusterRolloutAnalysisTemplate golden-signals, metric x: query: a '{{' opens no "
            "placeholder closed by '}}'",
        ),
        (
            {},
            {
                "metrics": [
                    {
                        "name": "x",
                        "sequential": {"bad": "rate({{ args.service }}[1m])", "total": "t"},
                    }
                ]
            },
            "ClusterRolloutAnalysisTemplate golden-signals, metric x.sequential.bad: ",
        ),
        (
            {"failureLimit": 5},
            {"failureWindow": 3},
            "ClusterRolloutAnalysisTemplate golden-signals, spec.failureWindow: must be at "
            "least failureLimit",
        ),
    ],
    ids=[
        "twice-with-the-analysis",
        "twice-in-two-templates",
        "undeclared-placeholder",
        "value-outside-a-literal",
        "backtick-in-a-raw-string",
        "unclosed-placeholder",
        "resolved-selector-invalid",
        "resolved-window-under-limit",
    ],
)
def test_an_invalid_result_is_invalid_template_naming_it(
    raw_changes: dict[str, Any], template_changes: dict[str, Any], message: str
) -> None:
    templates = _templates(**template_changes)
    templates[TemplateRef("golden-signals")] = Template(
        TemplateRef("golden-signals"), 1, copy.deepcopy(_GOLDEN_SPEC)
    )
    error = _error(_analysis(**raw_changes), templates)
    assert error.reason == Reason.INVALID_TEMPLATE
    assert error.message.startswith(message), error.message


def test_templates_giving_different_defaults_are_invalid_unless_the_analysis_sets_it() -> None:
    templates = _templates()
    templates[LOCAL] = Template(LOCAL, 1, {**_LOCAL_SPEC, "interval": "2m"})
    raw = _analysis(
        templates=[{"name": "golden-signals", "clusterScope": True}, {"name": "latency"}]
    )
    error = _error(raw, templates)
    assert error.reason == Reason.INVALID_TEMPLATE
    assert error.message == (
        "ClusterRolloutAnalysisTemplate golden-signals and RolloutAnalysisTemplate latency give "
        "different intervals ('1m' and '2m'): set spec.interval in the analysis"
    )
    assert resolve({**raw, "interval": "30s"}, "shop", templates).spec["interval"] == "30s"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"args": [{"name": "servce", "value": "x"}, {"name": "service", "value": "x"}]},
            "spec.args: servce is declared by none of the templates "
            "(ClusterRolloutAnalysisTemplate golden-signals)",
        ),
        ({"templates": "golden"}, "spec.templates: must be a list"),
        (
            {"templates": [{"name": "a"}] * 2},
            "spec.templates[1]: RolloutAnalysisTemplate a is named twice",
        ),
        ({"templates": [{"name": f"t{i}"} for i in range(11)]}, "spec.templates: at most 10"),
        ({"args": [{"name": "service", "value": 3}]}, "spec.args[0].value: must be a string"),
        ({"templates": None}, "spec.args: given, but no template is named"),
    ],
)
def test_the_analysis_s_own_templates_and_args_are_invalid_spec(
    changes: dict[str, Any], message: str
) -> None:
    error = _error(_analysis(**changes), _templates())
    assert error.reason == Reason.INVALID_SPEC
    assert error.message == message


def test_a_broken_own_field_is_left_for_parse_spec_to_report() -> None:
    # The analysis's own mistake stays InvalidSpec, reported by the caller's parse_spec.
    resolved = resolve(_analysis(target=None), "shop", _templates())
    assert "target" not in resolved.spec
    assert [m["name"] for m in resolved.spec["metrics"]] == ["error-rate", "errors-vs-old"]


def test_a_malformed_own_metric_is_kept_for_parse_spec_to_report() -> None:
    raw = _analysis(metrics=[{"query": "up"}])
    resolved = resolve(raw, "shop", _templates())
    assert resolved.spec["metrics"][-1] == {"query": "up"}
    with pytest.raises(InvalidSpecError) as invalid:
        parse_spec(resolved.spec)
    assert [e.field for e in invalid.value.errors] == [
        "spec.metrics[2].name",
        "spec.metrics[2].maxValue",
    ]
