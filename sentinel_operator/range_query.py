"""Ask Prometheus for a metric's samples over a time range (``/api/v1/query_range``).

``measuring.measure_metric`` calls ``measure_range`` for each range query a metric's kind asks
(docs/analysis.md: the samples of the new and the old pods over ``lookback``, after the metric's
instant query answered; the steps since the status's ``through``). It goes through the same
``PrometheusClient.fetch`` as the instant query: the same token, timeout, size cap and error
taxonomy, one HTTP request, never a retry, never an exception; the request counts as one of the
metric's in the operator's counters.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sentinel_core.measurement import Measurement, MeasurementError
from sentinel_operator.prometheus import PrometheusClient, parse_answer

# One series: its labels (``__name__`` dropped) and its non-NaN values, oldest first.
Series = tuple[dict[str, str], tuple[float, ...]]
# The same with each value's timestamp (seconds): what the kinds read steps from need.
TimedSeries = tuple[dict[str, str], tuple[tuple[float, float], ...]]


@dataclass(frozen=True)
class RangeResult:
    """The answer to one range query: every series, or a typed error."""

    metric: str
    timed: tuple[TimedSeries, ...] = ()
    error: MeasurementError | None = None
    message: str = ""

    @property
    def series(self) -> tuple[Series, ...]:
        """Return every series with its values only (compare's samples)."""
        return tuple((labels, tuple(v for _, v in points)) for labels, points in self.timed)


def measure_range(
    prometheus: PrometheusClient,
    metric: str,
    query: str,
    *,
    start: datetime,
    end: datetime,
    step: float,
) -> RangeResult:
    """Return every series of ``query`` from ``start`` to ``end`` at ``step`` seconds."""
    params = {
        "query": query,
        "start": f"{start.timestamp():.3f}",
        "end": f"{end.timestamp():.3f}",
        "step": f"{step:g}",
    }
    result = prometheus.fetch(
        metric, "/api/v1/query_range", params, parse_range_answer, range_unavailable
    )
    prometheus.counted(Measurement(metric=metric, error=result.error, message=result.message))
    if result.error is None:
        return result
    return RangeResult(metric=metric, error=result.error, message=prometheus.clean(result.message))


def measure_samples(
    prometheus: PrometheusClient, metric: str, query: str, *, at: datetime
) -> RangeResult:
    """Return every raw sample of ``query`` (a range selector) evaluated at ``at``.

    An instant query whose answer is a matrix: the samples as scraped, each with its own
    timestamp, nothing extrapolated (the sequential kind's step counts, docs/analysis.md).
    """
    params = {"query": query, "time": f"{at.timestamp():.3f}"}
    result = prometheus.fetch(
        metric, "/api/v1/query", params, parse_range_answer, range_unavailable
    )
    prometheus.counted(Measurement(metric=metric, error=result.error, message=result.message))
    if result.error is None:
        return result
    return RangeResult(metric=metric, error=result.error, message=prometheus.clean(result.message))


def range_unavailable(metric: str, message: str) -> RangeResult:
    return RangeResult(metric=metric, error=MeasurementError.UNAVAILABLE, message=message)


def parse_range_answer(
    metric: str, *, status: int, reason: str, content_type: str, body: bytes
) -> RangeResult:
    """Return the RangeResult of one answer (pure); never raise, whatever the bytes.

    Anything but a successful matrix is read by the instant query's ``parse_answer``, so both
    kinds of query report a refused query, an HTML page or a 5xx in the same words.
    """
    data = _matrix(status, body)
    if data is not None:
        series = [_series(item) for item in data]
        if any(item is None for item in series):
            return range_unavailable(metric, "Prometheus answered a malformed range series")
        return RangeResult(metric=metric, timed=tuple(s for s in series if s is not None))
    answer = parse_answer(
        metric, status=status, reason=reason, content_type=content_type, body=body
    )
    if answer.error is not None:
        return RangeResult(metric=metric, error=answer.error, message=answer.message)
    return range_unavailable(metric, "Prometheus answered a range query without a matrix")


def _matrix(status: int, body: bytes) -> list[Any] | None:
    if status != 200:
        return None
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(payload, dict) or payload.get("status") != "success":
        return None
    data = payload.get("data")
    if not isinstance(data, dict) or data.get("resultType") != "matrix":
        return None
    result = data.get("result")
    return result if isinstance(result, list) else None


def _series(item: Any) -> TimedSeries | None:
    if not isinstance(item, dict) or not isinstance(item.get("values", []), list):
        return None
    raw = item.get("metric")
    labels = {
        k: v
        for k, v in (raw.items() if isinstance(raw, dict) else ())
        if isinstance(k, str) and isinstance(v, str) and k != "__name__"
    }
    values: list[tuple[float, float]] = []
    for pair in item.get("values", []):
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], str)):
            return None
        moment = pair[0]
        if not isinstance(moment, int | float) or isinstance(moment, bool):
            return None
        try:
            value = float(pair[1])
        except ValueError:
            return None
        if not math.isnan(value):
            values.append((float(moment), value))
    return labels, tuple(values)
