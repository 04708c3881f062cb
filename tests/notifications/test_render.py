"""The PNG of a message: size, the maxValue line at its height, the baseline when present, and a
sequential metric's evidence with both sides' bad-event rates under it and the ratio's bounds as
a band under those."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from analyses import mirror
from analyses.models import Evaluation, MetricResult
from notifications import message, render
from testkit.notify_checks import decode_png, expected_row, rows_of_colour
from tests.analyses.resources import resource

NOW = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)


def samples(values: list[float | None]) -> list[tuple[datetime, float | None]]:
    start = NOW - timedelta(seconds=30 * len(values))
    return [(start + timedelta(seconds=30 * i), v) for i, v in enumerate(values)]


def test_one_panel_per_metric_with_the_threshold_at_its_height() -> None:
    latency = render.Series("p99-latency", 0.25, samples([0.1] * 60 + [0.4] * 10 + [None]))
    errors = render.Series("error-rate", 0.05, samples([0.01] * 71))
    image = decode_png(render.chart_png("shop/checkout", [latency, errors], [NOW], NOW))
    assert image.size == render.size_px(2) == (800, 748)
    rows = rows_of_colour(image, render.MAX_VALUE)
    for panel, series in enumerate((latency, errors)):
        want = expected_row(image, series.max_value, render.y_limits(series), panel, 2)
        assert min(abs(r - want) for r in rows) <= 2, (panel, rows, want)
    assert not rows_of_colour(image, render.BASELINE, share=0.05)


def test_the_baseline_is_drawn_when_the_history_has_one() -> None:
    points = samples([0.1] * 60)
    series = render.Series("p99-latency", 0.25, points, baseline=[(t, 0.2) for t, _ in points])
    image = decode_png(render.chart_png("shop/checkout", [series], [], NOW))
    want = expected_row(image, 0.2, render.y_limits(series), 0, 1)
    rows = rows_of_colour(image, render.BASELINE, share=0.15)
    assert rows and min(abs(r - want) for r in rows) <= 3, (rows, want)


def test_limits_cover_data_threshold_and_negative_values() -> None:
    assert render.y_limits(render.Series("m", 0.5, samples([0.1, 0.9]))) == (0.0, 0.9 * 1.15)
    assert render.y_limits(render.Series("m", 0.5, samples([None]))) == (0.0, 0.5 * 1.15)
    low, high = render.y_limits(render.Series("m", 0.0, samples([-2.0, -1.0])))
    assert low == -2.0 and high > 0.0
    # Nothing to draw is still a picture, with a sentence instead of panels.
    assert decode_png(render.chart_png("shop/empty", [], [], NOW)).size == render.size_px(1)


def test_a_metric_judged_only_against_its_baseline_has_no_max_line() -> None:
    points = samples([0.1] * 30 + [0.3] * 10)
    series = render.Series("p99-latency", None, points, baseline=[(t, 0.05) for t, _ in points])
    image = decode_png(render.chart_png("shop/checkout", [series], [], NOW))
    assert not rows_of_colour(image, render.MAX_VALUE, share=0.05)
    assert rows_of_colour(image, render.BASELINE, share=0.15)


def test_the_chart_is_drawn_in_a_child_process_that_keeps_matplotlib_s_memory() -> None:
    # Drawn in the worker itself, a chart left 20-80 MB of private memory behind per worker
    # (docs/reliability.md); here it must not even load a font into the caller.
    from matplotlib import font_manager

    fonts_before = font_manager._get_font.cache_info()
    image = decode_png(
        render.chart_png("shop/checkout", [render.Series("m", 0.5, samples([0.1] * 5))], [], NOW)
    )
    assert image.size == render.size_px(1)
    assert font_manager._get_font.cache_info() == fonts_before


def test_a_chart_that_cannot_be_drawn_is_one_error_with_its_reason() -> None:
    broken = render.Series("m", 0.5, [("not a time", 0.1)])  # type: ignore[list-item]
    try:
        render.chart_png("shop/broken", [broken], [], NOW)
    except render.DrawError as exc:
        assert str(exc).startswith("cannot draw the chart: "), exc
        assert "\n" not in str(exc)
    else:
        raise AssertionError("a chart of a non-time sample was drawn")


def test_a_sequential_metrics_evidence_is_drawn_on_a_log_scale_with_the_needed_line() -> None:
    series = render.Series("errors", 100.0, samples([1.0, 3.0, 30.0, 250.0]), evidence=True)
    assert render.y_limits(series) == (1.0, 1000.0)
    image = decode_png(render.chart_png("shop/checkout", [series], [], NOW))
    # On a log axis from 1 to 1000, 100 sits two thirds of the way up.
    bottom, top = render.panel_box(0, 1)
    want = (1 - (bottom + 2 / 3 * (top - bottom))) * image.size[1]
    rows = rows_of_colour(image, render.MAX_VALUE)
    assert rows and min(abs(r - want) for r in rows) <= 2, (rows, want)


def test_a_sequential_metrics_rates_and_band_panels_draw_at_their_height() -> None:
    evidence = render.Series("errors", 20.0, samples([1.0, 3.0, 8.0]), evidence=True)
    times = [at for at, _ in samples([None] * 40)]
    rates = render.Series("errors: bad events", None, (), sides=[(at, 3.0, 1.0) for at in times])
    assert render.y_limits(rates) == (0.0, 3.0 * 1.15)
    # The ratio's bounds 0.8-2 for the first 20 samples, then none (a gap), against 1.2.
    bounds = [(at, 0.8, 2.0) if i < 20 else (at, None, None) for i, at in enumerate(times)]
    band = render.Series("errors: ratio", None, (), band=bounds, margin=1.2)
    assert render.y_limits(band) == pytest.approx((0.8 / 1.25, 2.0 * 1.25))
    image = decode_png(render.chart_png("shop/checkout", [evidence, rates, band], [], NOW))
    assert image.size == render.size_px(3)
    for colour, value, share in ((render.NEW, 3.0, 0.25), (render.OLD, 1.0, 0.1)):
        want = expected_row(image, value, render.y_limits(rates), 1, 3)
        rows = rows_of_colour(image, colour, share=share)
        assert rows and min(abs(r - want) for r in rows) <= 3, (colour, rows, want)
    # The band's edges at 0.8 and 2 over the bounded half of the panel, on a log scale, and
    # the margin's line across it; between the edges the band is shaded, beyond them white.
    logs = tuple(math.log10(v) for v in render.y_limits(band))
    blue = rows_of_colour(image, render.VALUE, share=0.2)
    for value in (0.8, 2.0):
        want = expected_row(image, math.log10(value), logs, 2, 3)
        assert min(abs(r - want) for r in blue) <= 3, (value, blue, want)
    want = expected_row(image, math.log10(1.2), logs, 2, 3)
    assert min(abs(r - want) for r in rows_of_colour(image, render.MAX_VALUE)) <= 3
    inside = round(expected_row(image, math.log10(1.5), logs, 2, 3))
    outside = round(expected_row(image, math.log10(2.4), logs, 2, 3))
    x_bounded = int((render.LEFT + 0.25 * (render.RIGHT - render.LEFT)) * image.size[0])
    x_gap = int((render.LEFT + 0.75 * (render.RIGHT - render.LEFT)) * image.size[0])
    pixels = image.load()
    assert pixels[x_bounded, inside][:3] != (255, 255, 255)
    assert pixels[x_bounded, outside][:3] == (255, 255, 255)
    assert pixels[x_gap, inside][:3] == (255, 255, 255)


@pytest.mark.django_db
def test_the_picture_of_a_sequential_metric_is_its_evidence_both_sides_rates_and_the_band() -> None:
    metric = {
        "name": "errors-vs-old",
        "sequential": {
            "bad": "errors_total",
            "total": "all_total",
            "maxIncrease": {"percent": 20},
        },
    }
    row, _ = mirror.upsert_from_resource(resource(metrics=(metric,)))
    stored = [
        {"newBad": 30.0, "newTotal": 1000.0, "oldBad": 10.0, "oldTotal": 1000.0},
        {},
    ]
    for index, counts in enumerate(stored):
        at = NOW - timedelta(minutes=5 - index)
        evaluation = Evaluation.objects.create(
            analysis=row, started_at=at, finished_at=at, outcome="Pass", paused=index == 1
        )
        counted = {**counts, "steps": 1, "through": "2026-12-02T09:55:00Z"} if counts else {}
        MetricResult.objects.create(
            evaluation=evaluation,
            name="errors-vs-old",
            value=2.0,
            limit=20.0,
            counted=counted,
            ratio_lower=0.9 if index == 0 else None,
            ratio_upper=2.5,
            verdict="Pass",
        )
    series, pauses = message.series_of(row, since=NOW - render.WINDOW)
    assert [s.name for s in series] == [
        "errors-vs-old",
        "errors-vs-old: bad events in % of events, new pods against old pods",
        "errors-vs-old: new / old pods' error rate, bounds",
    ]
    evidence, rates, band = series
    assert band.margin == 1.2 and not band.points
    assert [pair for _, *pair in band.band] == [[0.9, 2.5], [None, 2.5]]
    assert evidence.evidence and evidence.max_value == 20.0
    assert [v for _, v in evidence.points] == [2.0, 2.0]
    assert rates.max_value is None and not rates.points
    assert [pair for _, *pair in rates.sides] == [[3.0, 1.0], [None, None]]
    assert pauses == [NOW - timedelta(minutes=4)]
