"""What the web side shows of a metric kind: the one small interface each kind's view gives,
and the history columns it keeps of its own (the REST API serves them)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from django.utils.safestring import SafeString

from analyses.models import AnalysisMetric, MetricResult

# The history columns of a band (``KindView.band``): the bounds of the new pods' rate over the
# old pods' after each evaluation. Not served by the REST API yet (docs/status.md).
BAND_COLUMNS = ("ratio_lower", "ratio_upper")


@dataclass(frozen=True)
class HistoryColumn:
    """A history column a kind keeps of its own (``MetricResult``), as the REST API serves it.

    The REST API's metric results carry it as a read-only field of the same name, ``null`` when
    the row's column is empty, described in the OpenAPI document by its own component.
    """

    # The ``MetricResult`` column, and the REST field's name.
    name: str
    # The OpenAPI component's name, and its schema given the CRD's schema of one
    # ``status.metricResults[]`` entry's properties (a kind whose column is its status field
    # copies the CRD's, so the document cannot drift from the resource).
    component: str
    schema: Callable[[Mapping[str, Any]], dict[str, Any]]
    # The field's description in the OpenAPI document.
    help_text: str


@dataclass(frozen=True)
class KindView:
    """One metric kind as the admin's card, its graphs, the history and the notifications show it.

    ``name`` is the core kind's (``sentinel_core.metric_kinds.MetricKind.name``); the registry
    (``analyses.kinds``) keeps one view per core kind and asks them in the core's order.
    """

    name: str
    # Whether a mirror row (a metric of the spec) is of this kind: its own column is filled in.
    claims: Callable[[AnalysisMetric], bool]
    # Whether a history row whose metric has left the spec was of this kind, from what it kept.
    kept: Callable[[MetricResult], bool]
    # The card's tag (``data-kind``, and what the history cell says the value is): the kind's
    # name, or a finer one (a threshold against its baseline), each with its words.
    tag: Callable[[AnalysisMetric | MetricResult], str]
    words: Mapping[str, str]
    # The main graph's caption for a tag, given the metric's maxValue.
    caption: Callable[[str, float | None], str]
    # What the metric reads from Prometheus: (label, PromQL) pairs.
    reads: Callable[[AnalysisMetric], tuple[tuple[str, str], ...]]
    # When it fails, in words (the card's "Fails when"), given the evidence needed if any.
    rule: Callable[[AnalysisMetric, float | None], SafeString | str]
    # Whether its value is evidence, drawn on a log scale against the evidence needed (its
    # limit), with the two sides' bad-event rates in a graph under it (docs/analysis.md).
    evidence: bool = False
    # The evidence needed, from the status's ``metricResults[]`` entry (None: not known there).
    needed: Callable[[Any], float | None] = lambda result: None
    # The graph point's fields (``charts.ChartPoint``) its history columns give, from a history
    # row's values ("comparison", "counted"): the two sides' medians, or their bad-event rates.
    point: Callable[[Mapping[str, Any]], dict[str, float | None]] = lambda values: {}
    # Whether its points carry bounds of the new pods' rate over the old pods' (``BAND_COLUMNS``,
    # which ``point`` reads), drawn as a band in a graph of their own: then the ratio a good
    # release stays under (the margin), given the metric; None: no such graph.
    band: Callable[[AnalysisMetric], float] | None = None
    # The history cell's template: what the value in a history row is, for this kind.
    cell: str = "admin/analyses/includes/kinds/value_cell.html"
    # A CSS class of the card's verdict sentence, beside metric-sentence.
    sentence_class: str = ""
    # The history columns it keeps of its own, each a field of the REST API's metric results.
    columns: tuple[HistoryColumn, ...] = ()
    # The mirror's column (``AnalysisMetric``) holding its part of the spec, filled in exactly
    # for a metric of this kind, for a database query to tell its metrics ("" for the kind
    # that takes the rest).
    spec_column: str = ""
