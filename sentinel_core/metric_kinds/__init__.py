"""The metric kinds, each a package behind one surface, and the one registry that picks a kind.

A kind is a ``MetricKind`` (``_kind``: what it parses, what it asks the provider, how it reads
the answers, how it judges, what the history keeps): ``threshold`` (``maxValue``, ``maxIncrease``
against a ``baseline``, the ``minSamples`` guard), ``compare`` and ``sequential`` (new pods
against old pods, docs/analysis.md). ``KINDS`` registers them; ``kind_of`` picks a parsed
metric's kind, ``parse_fields`` and ``bounded`` read a raw metric item with every kind. Nothing
outside a kind's package imports its private modules (an import-linter contract);
docs/architecture.md ("Adding a metric kind") says which files a new kind touches.
"""

from collections.abc import Callable, Mapping
from typing import Any

from sentinel_core.metric_kinds import compare, sequential, threshold
from sentinel_core.metric_kinds._kind import (
    AddError,
    Answer,
    Ask,
    Asking,
    Context,
    Facts,
    Instant,
    Judgement,
    MetricKind,
    Parsing,
    Range,
    Recorded,
    Samples,
    Situation,
    TimedSeries,
    series_labels,
)

# Every kind, in the order their fields are parsed (and their errors reported). The first one is
# the kind of a metric no other kind claims.
KINDS: tuple[MetricKind, ...] = (threshold.KIND, compare.KIND, sequential.KIND)


def kind_of(metric: Any) -> MetricKind:
    """Return the kind of ``metric`` (a ``spec.MetricSpec``)."""
    return next((kind for kind in KINDS[1:] if kind.applies(metric)), KINDS[0])


def bounded(item: Mapping[str, object]) -> bool:
    """Return whether a raw metric item gives a bound of a kind other than ``maxValue``."""
    return any(kind.bounded(item) for kind in KINDS)


def parse_fields(
    item: Mapping[str, object],
    path: str,
    *,
    strict: bool,
    parse_duration: Callable[[str], float],
    add: AddError,
) -> dict[str, object]:
    """Return every kind's fields of one raw metric item (``MetricSpec``'s keyword arguments).

    Each broken rule is reported through ``add`` under the CRD's field path.
    """
    parsing = Parsing(path, strict, parse_duration, add)
    fields: dict[str, object] = {}
    for kind in KINDS:
        fields |= kind.parse(item, parsing)
    return fields


__all__ = [
    "KINDS",
    "AddError",
    "Answer",
    "Ask",
    "Asking",
    "Context",
    "Facts",
    "Instant",
    "Judgement",
    "MetricKind",
    "Parsing",
    "Range",
    "Recorded",
    "Samples",
    "Situation",
    "TimedSeries",
    "bounded",
    "compare",
    "kind_of",
    "parse_fields",
    "sequential",
    "series_labels",
    "threshold",
]
