"""docs/templates.md: the REST API's and the admin's check of a spec naming templates.

``parse_analysis_spec`` checks what the CRD checks (the shape of ``templates`` and ``args``,
the analysis's own fields by ``parse_spec``'s rules) and keeps the spec as written, so that the
templates' defaults apply once the operator resolves it.
"""

from __future__ import annotations

from typing import Any

import pytest

from sentinel_core.spec import AnalysisSpec, InvalidSpecError, Target
from sentinel_core.templates import TemplatedSpec, parse_analysis_spec

_OWN = {"name": "errors", "query": "up", "maxValue": 1}


def _spec(**fields: Any) -> dict[str, Any]:
    return {
        "target": {"name": "checkout"},
        "templates": [{"name": "golden-signals", "clusterScope": True}],
        "args": [{"name": "service", "value": "checkout"}],
        **fields,
    }


def test_a_spec_of_templates_only_is_kept_as_written_without_defaults() -> None:
    raw = _spec()
    checked = parse_analysis_spec(raw, strict=True)
    assert isinstance(checked, TemplatedSpec)
    assert checked.target == Target("Deployment", "checkout")
    assert checked.metrics == ()
    # No interval, failureLimit or dryRun written: the templates' defaults must still apply.
    assert checked.to_dict() == raw
    assert checked.to_dict() is not raw


def test_own_metrics_are_parsed_and_returned() -> None:
    checked = parse_analysis_spec(_spec(metrics=[_OWN], interval="1m"), strict=True)
    assert isinstance(checked, TemplatedSpec)
    assert [m.name for m in checked.metrics] == ["errors"]
    assert checked.to_dict()["interval"] == "1m"


def test_a_spec_without_templates_is_parse_specs() -> None:
    checked = parse_analysis_spec({"target": {"name": "checkout"}, "metrics": [_OWN]})
    assert isinstance(checked, AnalysisSpec)
    assert checked.to_dict()["failureLimit"] == 3
    empty = parse_analysis_spec(
        {"target": {"name": "checkout"}, "metrics": [_OWN], "templates": []}
    )
    assert isinstance(empty, AnalysisSpec)


@pytest.mark.parametrize(
    ("raw", "errors"),
    [
        (
            _spec(templates=[{"name": "a"}, {"name": "a"}]),
            {"spec.templates[1]": ["RolloutAnalysisTemplate a is named twice"]},
        ),
        (_spec(templates=[{"clusterScope": True}]), {"spec.templates[0].name": ["is required"]}),
        (
            _spec(templates=[{"name": "a", "clusterScope": "yes"}]),
            {"spec.templates[0].clusterScope": ["must be true or false"]},
        ),
        (_spec(args=[{"name": "service"}]), {"spec.args[0].value": ["must be a string"]}),
        (
            _spec(args=[{"name": "a", "value": "1"}, {"name": "a", "value": "2"}]),
            {"spec.args[1]": ["a is given twice"]},
        ),
        (_spec(templates=[]), {"spec.args": ["given, but no template is named"]}),
        # The analysis's own fields by parse_spec's rules, all at once, strict.
        (
            _spec(interval="1s", metrics=[{"name": "P99"}], paused=True),
            {
                "spec.paused": ["unknown field"],
                "spec.metrics[0].name": [
                    "must be a DNS-1123 label: at most 63 lower-case letters, digits and '-', "
                    "starting and ending with a letter or digit"
                ],
                "spec.metrics[0].query": ["is required unless sequential is given"],
                "spec.metrics[0].maxValue": ["is required unless maxIncrease or compare is given"],
                "spec.interval": ["must be at least 5s, got 1s"],
            },
        ),
        ({"templates": [{"name": "a"}]}, {"spec.target": ["is required"]}),
    ],
    ids=[
        "named-twice",
        "no-name",
        "scope-not-bool",
        "arg-without-value",
        "arg-twice",
        "args-without-templates",
        "own-fields",
        "no-target",
    ],
)
def test_each_problem_under_its_field(raw: dict[str, Any], errors: dict[str, list[str]]) -> None:
    with pytest.raises(InvalidSpecError) as caught:
        parse_analysis_spec(raw, strict=True)
    assert caught.value.by_field() == errors


def test_failure_window_is_checked_against_a_limit_a_template_may_give() -> None:
    # As the CRD's rule: an absent failureLimit is read as 1 when templates are named...
    assert isinstance(parse_analysis_spec(_spec(failureWindow=2)), TemplatedSpec)
    # ...and an own one is checked.
    with pytest.raises(InvalidSpecError) as caught:
        parse_analysis_spec(_spec(failureWindow=2, failureLimit=3))
    assert caught.value.by_field() == {"spec.failureWindow": ["must be at least failureLimit"]}
