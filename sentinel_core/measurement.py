"""What measuring a metric produced: a value, no data, or a typed error.

The Prometheus client returns these and never raises; the decision core judges them. Keeping
the two apart (as Argo Rollouts does) means a failed query is data to decide on, not an
exception to route around.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class MeasurementError(StrEnum):
    """Why a query produced no value."""

    # Prometheus refused the query itself (HTTP 400 ``bad_data``, 422 ``execution``): permanent
    # until the spec changes, so it is reported and requeued at the normal interval.
    INVALID_QUERY = "InvalidQuery"
    # Prometheus could not be asked or did not answer usefully (connection refused, timeout,
    # HTTP 5xx, an HTML or truncated body, ``"status":"error"`` of a transient type): retried
    # with backoff.
    UNAVAILABLE = "Unavailable"
    # The metric's provider is not configured, or its namespace may not use it
    # (docs/operations.md#metric-providers): nothing was queried; permanent until the spec or the
    # operator's configuration changes.
    UNKNOWN_PROVIDER = "UnknownProvider"
    PROVIDER_NOT_ALLOWED = "ProviderNotAllowed"


# Errors that stop a metric before any query, decided like a rejected query: nothing counted.
PROVIDER_ERRORS = frozenset(
    {MeasurementError.UNKNOWN_PROVIDER, MeasurementError.PROVIDER_NOT_ALLOWED}
)


@dataclass(frozen=True)
class Measurement:
    """The answer for one metric of one evaluation."""

    metric: str
    # The worst (largest) sample; None when the result was empty or NaN, or on error.
    value: float | None = None
    # The value exactly as Prometheus printed it, e.g. "0.412".
    text: str | None = None
    # How many series the query returned.
    series: int = 0
    error: MeasurementError | None = None
    # Human detail: the Prometheus error text, or "worst of 3 series".
    message: str = ""
    # The worst series' labels as Prometheus returned them (``__name__`` dropped); the core
    # keeps at most 10 of them in the status.
    labels: tuple[tuple[str, str], ...] = ()
    # The metric kind's own reading of its other queries (sentinel_core.metric_kinds: a guard's
    # answer, a baseline, the samples or counts of the new and the old pods); None when the
    # kind read nothing beyond the value.
    reading: object | None = None
