"""Draw a metric's history as an inline SVG string, on the server: the admin's charts.

The admin's analysis page calls ``render_metric_chart`` once per metric with its newest
evaluations (``ChartPoint`` each); for a metric whose value is evidence (``analyses.kinds``'
``KindView.evidence``) also ``render_rates_chart``, the two sides' bad-event rates under it, and
for one whose view has a band (``KindView.band``) ``render_band_chart``, the ratio's bounds.
Everything else is private: ``_render`` stacks the layers, ``_rates`` the rates graph's,
``_band`` the band's,
``_layers`` draws them, ``_scale`` places values and moments on the plot, ``_compare`` draws the
new pods' and the old pods' lines, ``_svg`` holds the colours and the text element. Pure:
rows in, markup out.
"""

from analyses.charts._band import render_band_chart
from analyses.charts._rates import render_rates_chart
from analyses.charts._render import render_metric_chart
from analyses.charts._scale import ChartPoint

__all__ = ["ChartPoint", "render_band_chart", "render_metric_chart", "render_rates_chart"]
