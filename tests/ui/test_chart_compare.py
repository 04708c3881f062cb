"""The two lines of a ``compare`` metric (docs/analysis.md): new pods' and old pods' medians."""

from __future__ import annotations

from datetime import timedelta

from django.utils.html import strip_tags

from analyses.charts import ChartPoint, render_metric_chart
from analyses.kinds.compare import compare_text
from tests.ui.test_charts import SVG, T0, _by_class, _luminance, _parse, _polyline_points


def _compared(pairs: list[tuple[float, float] | None]) -> list[ChartPoint]:
    return [
        ChartPoint(
            at=T0 + timedelta(seconds=30 * i),
            value=None if pair is None else pair[0] * 1.02,
            new_median=None if pair is None else pair[0],
            old_median=None if pair is None else pair[1],
        )
        for i, pair in enumerate(pairs)
    ]


def test_new_and_old_are_two_lines_the_new_one_above_when_worse() -> None:
    points = _compared([(0.25, 0.25), (0.3, 0.25), (0.37, 0.25)])
    root = _parse(render_metric_chart(points, max_value=None, title="latency-vs-old"))
    (new,) = _by_class(root, "chart-new-pods")
    (old,) = _by_class(root, "chart-old-pods")
    new_ys = [y for _, y in _polyline_points(new)]
    old_ys = [y for _, y in _polyline_points(old)]
    assert new_ys[0] == old_ys[0]
    # SVG's y grows downwards: the new pods' rising median is drawn ever higher.
    assert new_ys[2] < new_ys[1] < new_ys[0]
    assert len(set(old_ys)) == 1
    labels = [e.text for e in root.iter(f"{SVG}text") if "label" in (e.get("class") or "")]
    assert "new pods' median 0.37" in labels and "old pods' median 0.25" in labels


def test_an_evaluation_without_comparison_breaks_both_lines() -> None:
    points = _compared([(0.3, 0.25), (0.31, 0.25), None, (0.3, 0.26), (0.32, 0.25)])
    root = _parse(render_metric_chart(points, max_value=None, title="m"))
    assert len(_by_class(root, "chart-new-pods")) == 2
    assert len(_by_class(root, "chart-old-pods")) == 2


def test_a_metric_without_compare_draws_no_such_lines() -> None:
    points = [ChartPoint(at=T0 + timedelta(seconds=30 * i), value=0.1) for i in range(3)]
    root = _parse(render_metric_chart(points, max_value=1.0, title="m"))
    assert not _by_class(root, "chart-new-pods") and not _by_class(root, "chart-old-pods")
    assert not _by_class(root, "chart-comparison-legend")


def test_the_legend_has_aa_contrast_on_the_white_card() -> None:
    root = _parse(render_metric_chart(_compared([(0.3, 0.25)]), max_value=None, title="m"))
    labels = [e for g in _by_class(root, "chart-comparison-legend") for e in g.iter(f"{SVG}text")]
    assert len(labels) == 2
    white = _luminance("#ffffff")
    for label in labels:
        ratio = (white + 0.05) / (_luminance(label.get("fill") or "#ffffff") + 0.05)
        assert ratio >= 4.5, (label.text, ratio)


def test_the_spec_in_words() -> None:
    spec = {"by": "pod_template_hash", "worse": "increase", "maxEffect": {"percent": 10}}
    spec |= {"confidence": 0.95, "lookback": "5m", "minSamples": 10}
    # The card's "Fails when" (each number in a span whose title holds its exact value).
    assert strip_tags(compare_text(spec)) == (
        "new pods vs old by pod_template_hash: fails when increased by more than 10 % "
        "(confidence 0.95, over 5m)"
    )
    assert compare_text({}) == ""
