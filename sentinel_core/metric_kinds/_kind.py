"""What a metric kind is: the one small interface each kind's package exposes, and its types.

A kind (``threshold``, ``compare``, ``sequential``) is a ``MetricKind``: what it parses of a
metric, what it asks the metric's provider (instant queries, at an instant or now, and range
queries), how it reads the answers into its own reading (``Measurement.reading``), how it judges
that reading and what the history keeps of it. docs/architecture.md ("Adding a metric kind") walks
through a new one.

Measuring is a generator, so that the kind decides which query comes next from what the last one
answered while the operator's adapter (``sentinel_operator.measuring``) does the asking without
knowing any kind: the kind yields an ``Instant`` or a ``Range``, the adapter sends back the answer
(a ``Measurement`` for an instant query, the series for a range query), and the kind returns the
metric's ``Measurement``. The adapter ends the metric at the first query that fails, with that
error named by the query's ``label``, so a kind never sees an error and every later query is
asked only after the earlier ones answered (docs/operator.md).

The status and the spec import the kinds (their fields are the kinds' types), so nothing here
imports them: they are handed in as ``Any`` and read by attribute. Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sentinel_core.conditions import Reason, Verdict
from sentinel_core.kinds import DEPLOYMENT
from sentinel_core.measurement import Measurement

# Reports one error: (field path, message).
AddError = Callable[[str, str], None]
# status.metricResults[].series: at most this many labels, each value cut to this length.
MAX_SERIES_LABELS = 10
MAX_LABEL_VALUE = 100
# One series of a range answer: its labels and its (timestamp, value) points, oldest first.
TimedSeries = tuple[Mapping[str, str], Sequence[tuple[float, float]]]


@dataclass(frozen=True)
class Parsing:
    """How one raw metric item is parsed: its field path, strictness, durations and error sink."""

    # The item's field path, "spec.metrics[0]".
    path: str
    # Report unknown fields (the REST API and the admin), or ignore them (a resource as read).
    strict: bool
    parse_duration: Callable[[str], float]
    add: AddError


@dataclass(frozen=True)
class Instant:
    """An instant query: at ``at`` (Prometheus's ``time``), or now when None."""

    query: str
    at: datetime | None = None
    # What an error of this query is called in the metric's message ("baseline query");
    # "" for the metric's own query, whose error is the metric's as it is.
    label: str = ""


@dataclass(frozen=True)
class Range:
    """A range query from ``start`` to ``end`` every ``step`` seconds."""

    query: str
    start: datetime
    end: datetime
    step: float
    label: str = ""


@dataclass(frozen=True)
class Samples:
    """An instant query of a range selector at ``at``: every raw sample of its window.

    Nothing is computed on the server (no ``increase``, no extrapolation): what the kind needs
    is the counters' values as scraped.
    """

    query: str
    at: datetime
    label: str = ""


Ask = Instant | Range | Samples
# What the adapter sends back: an instant query's Measurement, a range query's or a samples
# query's series.
Answer = Measurement | tuple[TimedSeries, ...]
# A kind's measuring: yields what to ask, is sent each answer, returns the metric's Measurement.
Asking = Generator[Ask, Answer, Measurement]


@dataclass(frozen=True)
class Facts:
    """What the operator knows when it measures one metric (``MetricKind.facts`` fills it).

    ``now`` ends a range query and ``step`` (the analysis interval) is its step; ``new_hash`` and
    ``old_hashes`` tell the target's new pods from the old ones (None and empty when unknown or
    not read); ``baseline_at`` is when a baseline is asked for (None: none), ``through`` where
    evidence continues from (None: nothing to continue).
    """

    now: datetime | None = None
    step: float = 30.0
    new_hash: str | None = None
    old_hashes: tuple[str, ...] = ()
    baseline_at: datetime | None = None
    through: str | None = None


@dataclass(frozen=True)
class Situation:
    """One evaluation as a kind sees it, read from the same status by the reconciler and the core.

    ``status`` is the previous ``AnalysisStatus``, ``rollout`` the target's ``Rollout`` as this
    attempt sees it (or None), ``spec`` the ``AnalysisSpec``; ``resumed_now`` says this attempt
    saw a person resume the target (the decision core only).
    """

    status: Any
    spec: Any
    generation: int
    rollout: Any
    now: datetime
    resumed_now: bool = False
    target_kind: str = DEPLOYMENT
    new_hash: str | None = None
    old_hashes: tuple[str, ...] = ()

    @property
    def facts(self) -> Facts:
        """Return the facts every kind shares; a kind adds its own (``MetricKind.facts``)."""
        return Facts(
            now=self.now,
            step=self.spec.interval_seconds,
            new_hash=self.new_hash,
            old_hashes=self.old_hashes,
        )


@dataclass(frozen=True)
class Context:
    """What a kind judges a measurement with beyond the metric and the measurement.

    ``situation`` is None for an attempt the Kubernetes API cut short (``decision.interrupted``):
    a kind that continues evidence from the status does not continue it then.
    """

    rollout: Any = None
    target_kind: str = DEPLOYMENT
    situation: Situation | None = None


@dataclass(frozen=True)
class Judgement:
    """One metric's result, with why it is Inconclusive and what broke when it failed."""

    # A status.MetricResult.
    result: Any
    # NoData, InsufficientData, NoBaseline or NoComparison for an Inconclusive result.
    reason: Reason | None = None
    # For a Fail: the one-sentence why, naming the metric ("p99: 0.412 is 249 % above the
    # baseline ..."); for an Inconclusive: what is missing, without the name.
    why: str = ""


@dataclass(frozen=True)
class Recorded:
    """What the history row keeps of a measurement's reading (its columns)."""

    baseline: float | None = None
    baseline_text: str = ""
    samples_text: str = ""
    # The row's value and its text when they are not the measurement's (None: its own).
    value: float | None = None
    value_text: str | None = None
    # The ratio's bounds where the kind has them (sequential), None where a side has none.
    ratio_lower: float | None = None
    ratio_upper: float | None = None


@dataclass(frozen=True)
class MetricKind:
    """One metric kind's surface: everything the rest of the product asks of it."""

    name: str
    # Whether a parsed metric (spec.MetricSpec) is of this kind.
    applies: Callable[[Any], bool]
    # Whether a raw metric item gives a bound of this kind (else maxValue is required).
    bounded: Callable[[Mapping[str, object]], bool]
    # Parse the kind's fields of one raw metric item: MetricSpec's keyword arguments.
    parse: Callable[[Mapping[str, object], Parsing], dict[str, object]]
    # Whether measuring needs the target's new and old pods' hashes (one read per evaluation).
    sides: bool
    # The parsed metric with the defaults that depend on the target's kind, given its raw item
    # and the label that tells the target's pods apart (a side's ``by`` left out).
    targeted: Callable[[Any, Mapping[str, object], str], Any]
    # The facts to measure with (Facts), from what the evaluation knows.
    facts: Callable[[Any, Situation], Facts]
    # What to ask and how to read it (see the module's docstring).
    measure: Callable[[Any, Facts], Asking]
    # The judgement of a measurement that got answers, from the decision core's base result.
    judge: Callable[[Any, Measurement, Any, Context], Judgement]
    # What the history row keeps of a measurement that got answers and of its judged result.
    recorded: Callable[[Measurement, Any], Recorded]


def series_labels(labels: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """Return the labels kept in status: sorted by name, at most 10, values cut to 100 chars."""
    kept = sorted((k, v) for k, v in labels if k != "__name__")[:MAX_SERIES_LABELS]
    return tuple((k, v[:MAX_LABEL_VALUE]) for k, v in kept)


def inconclusive(base: Any, reason: Reason, message: str) -> Judgement:
    """Return ``base`` Inconclusive for ``reason``, ``message`` saying what is missing."""
    return Judgement(replace(base, verdict=Verdict.INCONCLUSIVE, message=message), reason, message)


def with_sides_label(metric: Any, item: Mapping[str, object], field: str, by: str) -> Any:
    """Return ``metric`` with ``by`` as its ``field``'s label when the item left ``by`` out.

    The CRD cannot default ``by`` from the target's kind, so the kinds that compare the two
    sides take the target's label here (``MetricKind.targeted``).
    """
    given = item.get(field)
    if not isinstance(given, Mapping) or "by" in given:
        return metric
    return replace(metric, **{field: replace(getattr(metric, field), by=by)})
