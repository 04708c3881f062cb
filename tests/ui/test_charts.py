"""Unit tests of ``analyses.charts``: parse the SVG and check what it draws, not its pixels."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta

from analyses.charts import ChartPoint, render_metric_chart

SVG = "{http://www.w3.org/2000/svg}"
T0 = datetime(2026, 11, 29, 10, 0, 0, tzinfo=UTC)


def _points(values: list[float | None], paused_at: int | None = None) -> list[ChartPoint]:
    return [
        ChartPoint(at=T0 + timedelta(seconds=30 * i), value=v, paused=i == paused_at)
        for i, v in enumerate(values)
    ]


def _parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    return root


def _by_class(root: ET.Element, css: str) -> list[ET.Element]:
    return [e for e in root.iter() if css in (e.get("class") or "").split()]


def _polyline_points(element: ET.Element) -> list[tuple[float, float]]:
    pairs = (pair.split(",") for pair in (element.get("points") or "").split())
    return [(float(x), float(y)) for x, y in pairs]


def test_the_max_line_sits_between_values_below_and_above_it() -> None:
    root = _parse(render_metric_chart(_points([0.1, 0.4]), max_value=0.25, title="p99"))
    (line,) = _by_class(root, "chart-max")
    assert line.get("data-max-value") == "0.25"
    max_y = float(line.get("y1") or "nan")
    assert line.get("y1") == line.get("y2")
    (series,) = _by_class(root, "chart-value")
    (_, low_y), (_, high_y) = _polyline_points(series)
    # SVG's y grows downwards: a larger value is drawn higher, i.e. with a smaller y.
    assert high_y < max_y < low_y
    labels = [e.text for e in _by_class(root, "chart-max-label")]
    assert labels == ["max 0.25"]


def test_values_are_plotted_in_time_order_whatever_the_input_order() -> None:
    points = _points([0.1, 0.2, 0.3])
    root = _parse(render_metric_chart(list(reversed(points)), max_value=1.0, title="m"))
    (series,) = _by_class(root, "chart-value")
    xs = [x for x, _ in _polyline_points(series)]
    ys = [y for _, y in _polyline_points(series)]
    assert xs == sorted(xs) and len(set(xs)) == 3
    assert ys == sorted(ys, reverse=True)  # rising values


def test_samples_above_the_max_are_marked_as_breaches() -> None:
    root = _parse(render_metric_chart(_points([0.1, 0.3, 0.2, 0.5]), max_value=0.25, title="m"))
    dots = _by_class(root, "chart-dot")
    breaches = _by_class(root, "chart-breach")
    assert len(dots) == 4
    assert len(breaches) == 2
    assert all(b.get("fill") != dots[0].get("fill") for b in breaches)
    assert [b.find(f"{SVG}title").text for b in breaches] == [  # type: ignore[union-attr]
        "2026-11-29 10:00:30 UTC: 0.3",
        "2026-11-29 10:01:30 UTC: 0.5",
    ]
    title = root.find(f"{SVG}title")
    assert title is not None and "2 above the maximum 0.25" in (title.text or "")
    desc = root.find(f"{SVG}desc")
    assert desc is not None
    assert "0.2 at 2026-11-29 10:01:00 UTC; 0.5 at 2026-11-29 10:01:30 UTC (above the maximum)" in (
        desc.text or ""
    )
    assert root.get("role") == "img"
    assert root.get("aria-labelledby") == f"{title.get('id')} {desc.get('id')}"


def test_a_gap_without_data_breaks_the_line_and_is_marked_on_the_axis() -> None:
    root = _parse(render_metric_chart(_points([0.1, 0.2, None, 0.3]), max_value=1, title="m"))
    segments = _by_class(root, "chart-value")
    assert [len(_polyline_points(s)) for s in segments] == [2, 1]
    (gap,) = _by_class(root, "chart-no-data")
    assert "no data" in (gap.find(f"{SVG}title").text or "")  # type: ignore[union-attr]


def test_pauses_are_marked_at_their_evaluation() -> None:
    points = _points([0.1, 0.3, 0.4, 0.5], paused_at=2)
    root = _parse(render_metric_chart(points, max_value=0.25, title="m"))
    (pause,) = _by_class(root, "chart-pause")
    line = pause.find(f"{SVG}line")
    assert line is not None and line.get("x1") == line.get("x2")
    (series,) = _by_class(root, "chart-value")
    assert float(line.get("x1") or "nan") == _polyline_points(series)[2][0]
    assert "10:01:00" in (pause.find(f"{SVG}title").text or "")  # type: ignore[union-attr]


def test_no_points_still_draws_the_max_line_and_says_so() -> None:
    root = _parse(render_metric_chart([], max_value=0.25, title="p99"))
    assert len(_by_class(root, "chart-max")) == 1
    assert not _by_class(root, "chart-value")
    assert [e.text for e in _by_class(root, "chart-empty")] == ["No evaluations yet"]
    assert root.get("data-points") == "0"


def test_every_coordinate_is_inside_the_view_box_even_for_infinite_or_huge_values() -> None:
    points = _points([0.1, math.inf, 1e9, -math.inf, math.nan, 0.2])
    svg = render_metric_chart(points, max_value=0.25, title="m", width=600, height=200)
    root = _parse(svg)
    assert root.get("viewBox") == "0 0 600 200"
    for element in root.iter():
        for attribute in ("x", "x1", "x2", "cx", "y", "y1", "y2", "cy"):
            raw = element.get(attribute)
            if raw is not None:
                value = float(raw)
                assert math.isfinite(value)
                assert 0 <= value <= (600 if "x" in attribute else 200)
    plotted = {
        round(float(d.get("cx") or "nan")): float(d.get("cy") or "nan")
        for d in _by_class(root, "chart-dot")
    }
    assert len(plotted) == 5  # NaN is a gap, not a dot
    # +Inf is pinned to the top edge of the plot, -Inf to the bottom.
    tops = sorted(plotted.values())
    assert tops[0] == 18.0 and tops[-1] == 200 - 30.0


def test_a_single_point_is_centred() -> None:
    root = _parse(render_metric_chart(_points([0.1]), max_value=0.25, title="m", width=720))
    (dot,) = _by_class(root, "chart-dot")
    left, right = 58.0, 720 - 18.0
    assert float(dot.get("cx") or "nan") == round((left + right) / 2, 1)


def test_text_is_escaped() -> None:
    title = 'p99 <script>alert("x")</script> & more'
    svg = render_metric_chart(_points([0.1]), max_value=0.25, title=title)
    assert "<script>" not in svg
    root = _parse(svg)
    (svg_title,) = [e for e in root if e.tag == f"{SVG}title"]
    assert title in (svg_title.text or "")


def test_the_scale_leaves_headroom_above_the_highest_value() -> None:
    root = _parse(render_metric_chart(_points([0.1, 0.9]), max_value=0.25, title="m"))
    (series,) = _by_class(root, "chart-value")
    top_y = min(y for _, y in _polyline_points(series))
    frame = next(e for e in root if e.tag == f"{SVG}rect")
    assert top_y > float(frame.get("y") or "nan")  # below the top edge of the plot
