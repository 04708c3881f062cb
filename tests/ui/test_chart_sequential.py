"""A sequential metric's chart (docs/analysis.md): its evidence on a log scale, the needed line.

Parsed SVG, as tests/ui/test_charts.py does: the grid is whole powers of ten, a value ten times
another sits one decade higher, and the line at the evidence needed is labelled as such.
"""

from __future__ import annotations

from analyses.charts import render_metric_chart
from tests.ui.test_charts import _by_class, _parse, _points


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
