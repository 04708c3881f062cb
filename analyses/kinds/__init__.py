"""The metric kinds as the web side shows them, one view per kind, picked in one place.

Each core kind (``sentinel_core.metric_kinds.KINDS``) has a ``KindView`` here (``_view``): the
admin's metric card (its tag, what it reads, when it fails), its graphs (``evidence``: a log
scale against the evidence needed, with the sides' rates under it), the history's cell and the
notifications' pictures ask the view of a metric instead of naming its kind, and the REST API
serves the history columns a kind keeps of its own (``COLUMNS``). ``view_of`` picks
the view of a mirror row, ``view_of_result`` that of a history row whose metric has left the spec,
asking the kinds in the core's order, the first (the threshold) taking the rest.
docs/architecture.md ("Adding a metric kind") lists the files a new kind touches.
"""

from __future__ import annotations

from django.db.models import Q

from analyses.kinds import compare, sequential, threshold
from analyses.kinds._view import BAND_COLUMNS, HistoryColumn, KindView
from analyses.models import AnalysisMetric, MetricResult
from sentinel_core.metric_kinds import KINDS

_VIEWS = {view.name: view for view in (threshold.VIEW, compare.VIEW, sequential.VIEW)}
if set(_VIEWS) != {kind.name for kind in KINDS}:
    # A core kind the web side cannot show would be shown as a threshold: fail at start-up.
    raise RuntimeError(f"analyses.kinds has views for {sorted(_VIEWS)}, the core kinds differ")
# In the core's order.
VIEWS: tuple[KindView, ...] = tuple(_VIEWS[kind.name] for kind in KINDS)
# Every tag's words (the card's tag), across the kinds.
WORDS: dict[str, str] = {tag: words for view in VIEWS for tag, words in view.words.items()}
# The history columns the kinds keep of their own, in the core's order (the REST API's fields).
COLUMNS: tuple[HistoryColumn, ...] = tuple(column for view in VIEWS for column in view.columns)


def evidence_metrics() -> Q:
    """Return the filter of the mirror's metrics (``AnalysisMetric``) whose value is evidence.

    The database's side of ``KindView.evidence``: each such kind's ``spec_column`` filled in.
    """
    found = Q(pk__in=[])  # no metric, while no kind's value is evidence
    for view in VIEWS:
        if view.evidence:
            found |= ~Q(**{view.spec_column: {}})
    return found


def view_of(metric: AnalysisMetric) -> KindView:
    """Return the view of a metric of the spec (a mirror row)."""
    return next((view for view in VIEWS[1:] if view.claims(metric)), VIEWS[0])


def view_of_result(result: MetricResult) -> KindView:
    """Return the view of a history row, from what it kept (its metric may have left the spec)."""
    return next((view for view in VIEWS[1:] if view.kept(result)), VIEWS[0])


__all__ = [
    "BAND_COLUMNS",
    "COLUMNS",
    "VIEWS",
    "WORDS",
    "HistoryColumn",
    "KindView",
    "evidence_metrics",
    "view_of",
    "view_of_result",
]
