"""The PNG of a message: size, the maxValue line at its height, the baseline when present."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from notifications import render
from testkit.notify_checks import decode_png, expected_row, rows_of_colour

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
