"""A sequential metric's charts (docs/analysis.md): its evidence on a log scale, the needed line,
under it both sides' bad-event rates from the counts each evaluation stored, and under those the
ratio's bounds as a band.

Parsed SVG, as tests/ui/test_charts.py does: the grid is whole powers of ten, a value ten times
another sits one decade higher, and the line at the evidence needed is labelled as such; the
rates graph is built by the admin view from real history rows.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from analyses import mirror
from analyses.admin.views import chart_points, metric_charts
from analyses.charts import render_metric_chart, render_rates_chart
from analyses.models import Evaluation, MetricResult
from tests.analyses.resources import resource
from tests.ui.test_charts import T0, _by_class, _parse, _points, _polyline_points


def test_the_evidence_is_drawn_by_decades_up_to_the_line_of_the_evidence_needed() -> None:
    svg = render_metric_chart(
        _points([1.0, 0.1, 10.0, 250.0], paused_at=3), max_value=100, title="errors", evidence=True
    )
    root = _parse(svg)
    (line,) = _by_class(root, "chart-max")
    assert line.get("data-max-value") == "100"
    labels = [e.text for e in _by_class(root, "chart-max-label")]
    assert labels == ["needed 100"]
    ticks = [e.text for e in root.iter() if e.text in {"0.1", "1", "10", "100", "1000"}]
    assert {"0.1", "1", "10", "100", "1000"} <= set(ticks)
    # Equal ratios, equal distances: 0.1 -> 1 -> 10 are one decade apart each.
    y = {e.text: float(e.get("y") or 0) for e in root.iter() if e.text in {"0.1", "1", "10"}}
    assert abs((y["0.1"] - y["1"]) - (y["1"] - y["10"])) < 0.2


def test_without_evidence_the_scale_stays_linear() -> None:
    svg = render_metric_chart(_points([0.1, 0.4]), max_value=0.25, title="p99")
    labels = [e.text for e in _by_class(_parse(svg), "chart-max-label")]
    assert labels == ["max 0.25"]


# -- the two sides' bad-event rates, under the evidence ----------------------------------------

SEQUENTIAL_METRIC = {
    "name": "errors-vs-old",
    "sequential": {
        "bad": 'http_requests_total{code=~"5.."}',
        "total": "http_requests_total",
        "maxIncrease": {"percent": 20},
    },
}


def _counted(new_bad: float, old_bad: float, total: float = 1000.0) -> dict[str, object]:
    return {
        "newBad": new_bad,
        "newTotal": total,
        "oldBad": old_bad,
        "oldTotal": total,
        "steps": 1,
        "through": "2026-11-29T10:00:00Z",
    }


@pytest.mark.django_db
def test_the_view_draws_both_sides_rates_from_the_counts_each_evaluation_stored() -> None:
    row, _ = mirror.upsert_from_resource(resource(metrics=(SEQUENTIAL_METRIC,)))
    (metric,) = row.metrics.all()
    assert metric.is_sequential and metric.as_spec()["sequential"]["total"] == "http_requests_total"
    # Three evaluations: two counted a step each, the one between counted none (no whole step).
    stored = [_counted(30, 10), {}, _counted(50, 10)]
    # The ratio's bounds after each: none yet, then both sides, then the upper side only.
    bounds = [(None, None), (0.712345678, 2.5), (None, 1.23456789)]
    for index, (counted, (low, high)) in enumerate(zip(stored, bounds, strict=True)):
        at = T0 + timedelta(seconds=30 * index)
        evaluation = Evaluation.objects.create(
            analysis=row, started_at=at, finished_at=at, outcome="Pass"
        )
        MetricResult.objects.create(
            evaluation=evaluation,
            name="errors-vs-old",
            value=1.5 * (index + 1),
            limit=20.0,
            counted=counted,
            ratio_lower=low,
            ratio_upper=high,
            verdict="Pass",
        )

    points = sorted(chart_points(row)["errors-vs-old"], key=lambda p: p.at)
    assert [(p.new_rate, p.old_rate) for p in points] == [(0.03, 0.01), (None, None), (0.05, 0.01)]

    (chart,) = metric_charts(row)
    evidence = _parse(chart.svg)
    assert [e.text for e in _by_class(evidence, "chart-max-label")] == ["needed 20"]
    rates = _parse(chart.rates_svg)
    assert rates.get("data-points") == "2"
    # The new pods' line has a gap where nothing was counted: two one-point ticks; the old
    # pods' too. The new pods' 5 % is drawn above their 3 %, and both above the old pods' 1 %.
    news = [_polyline_points(e) for e in _by_class(rates, "chart-new-pods")]
    olds = [_polyline_points(e) for e in _by_class(rates, "chart-old-pods")]
    assert len(news) == len(olds) == 2
    assert news[1][0][1] < news[0][0][1] < olds[0][0][1] == olds[1][0][1]
    labels = [
        e.text for e in _by_class(rates, "chart-new-label") + _by_class(rates, "chart-old-label")
    ]
    assert labels == ["new pods' bad events 5 %", "old pods' bad events 1 %"]

    # Under the rates, the ratio's bounds as a band: a gap where neither side was bounded, then
    # one run of two evaluations; the missing lower side runs to the plot's bottom edge. Labels
    # have six significant digits.
    assert [(p.ratio_lower, p.ratio_upper) for p in points] == bounds
    band = _parse(chart.band_svg)
    assert band.get("data-points") == "2"
    (polygon,) = _by_class(band, "chart-band")
    assert polygon.get("data-evaluations") == "2"
    assert (polygon.get("data-lower"), polygon.get("data-upper")) == ("", "1.23457")
    corners = [tuple(map(float, c.split(","))) for c in (polygon.get("points") or "").split()]
    (top_2, top_3, bottom_3, bottom_2) = corners
    (margin,) = _by_class(band, "chart-band-margin")
    (one,) = _by_class(band, "chart-band-one")
    assert margin.get("data-value") == "1.2" and one.get("data-value") == "1"
    y_margin, y_one = float(margin.get("y1") or 0), float(one.get("y1") or 0)
    # Up the scale is up the page: 2.5, 1.23456789, the margin 1.2, 1, 0.712345678, the edge.
    assert top_2[1] < top_3[1] < y_margin < y_one < bottom_2[1] < bottom_3[1]
    assert top_2[0] == bottom_2[0] < top_3[0] == bottom_3[0]
    assert [e.text for e in _by_class(band, "chart-band-margin-label")] == ["margin 1.2"]
    desc = band.find("{http://www.w3.org/2000/svg}desc")
    assert desc is not None and "0.712346\u20132.5 \u00d7" in (desc.text or "")
    assert "at most 1.23457 \u00d7" in (desc.text or "")


def test_a_rates_graph_without_counted_steps_says_so() -> None:
    empty = _parse(render_rates_chart(_points([1.0, 2.0]), title="errors"))
    assert [e.text for e in _by_class(empty, "chart-empty")] == [
        "No steps counted on both sides yet"
    ]
    assert not _by_class(empty, "chart-new-pods")
