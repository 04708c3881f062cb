"""Where a refused save's reasons go (analyses.admin.forms.place): each on the form field that
answers for its path, as the REST API names it; a path no field answers for stays above the
form, with the path, so the reader still learns which part of the resource it means.
"""

from __future__ import annotations

import pytest

from analyses.admin.forms import MetricForm, Problem, place

pytestmark = pytest.mark.django_db


@pytest.fixture
def metric_forms() -> list[MetricForm]:
    # The second form on the page is the first metric of the spec (the first was deleted).
    return [MetricForm(prefix="metrics-1"), MetricForm(prefix="metrics-2")]


@pytest.mark.parametrize(
    ("path", "where"),
    [
        ("spec.interval", (None, "interval")),
        ("spec.failureWindow", (None, "failure_window")),
        ("spec.target.name", (None, "target_name")),
        ("spec.target.kind", (None, "target_kind")),
        ("spec.notify[3]", (None, "notify")),
        ("spec.templates", (None, "templates")),
        ("spec.args", (None, "args")),
        ("name", (None, "name")),
        ("spec.metrics[0].query", ("metrics-1", "query")),
        ("spec.metrics[1].maxIncrease", ("metrics-2", "max_increase_percent")),
        ("spec.metrics[1].maxIncrease.absolute", ("metrics-2", "max_increase_absolute")),
        ("spec.metrics[0].baseline.offset", ("metrics-1", "baseline_offset")),
        ("spec.metrics[0].minSamples.min", ("metrics-1", "min_samples_min")),
        ("spec.metrics[0].provider", ("metrics-1", "provider")),
        ("spec.metrics[0].compare", ("metrics-1", "compare_on")),
        ("spec.metrics[0].compare.confidence", ("metrics-1", "compare_confidence")),
        ("spec.metrics[1].compare.maxEffect", ("metrics-2", "compare_max_effect_percent")),
        (
            "spec.metrics[1].compare.maxEffect.absolute",
            ("metrics-2", "compare_max_effect_absolute"),
        ),
        # A key the group has no field for (an unknown one) is the group's tick box.
        ("spec.metrics[0].compare.colour", ("metrics-1", "compare_on")),
    ],
)
def test_a_path_lands_on_its_field(
    metric_forms: list[MetricForm], path: str, where: tuple[str | None, str]
) -> None:
    assert place(path, "is wrong", metric_forms) == Problem(*where, "is wrong")


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("spec.metrics[1]", Problem("metrics-2", None, "is wrong")),
        ("spec.metrics[0].colour", Problem("metrics-1", None, "spec.metrics[0].colour: is wrong")),
        ("spec.metrics", Problem(None, None, "spec.metrics: is wrong")),
        # One line of the templates or arguments field: the field, and which entry.
        (
            "spec.templates[1].name",
            Problem(None, "templates", "spec.templates[1].name: is wrong"),
        ),
        ("spec.args[0].value", Problem(None, "args", "spec.args[0].value: is wrong")),
        ("spec.metrics[5].name", Problem(None, None, "spec.metrics[5].name: is wrong")),
        ("", Problem(None, None, "is wrong")),
    ],
)
def test_a_path_no_field_answers_for_stays_on_the_form_with_its_path(
    metric_forms: list[MetricForm], path: str, expected: Problem
) -> None:
    assert place(path, "is wrong", metric_forms) == expected
