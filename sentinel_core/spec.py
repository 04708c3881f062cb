"""Parse and validate a RolloutAnalysis ``spec`` into a typed, frozen ``AnalysisSpec``.

This module is the single source of the spec rules of SPEC §3 (the same ones the CRD's schema
enforces in the API server): the reconciler calls ``parse_spec`` on every resource it reads, and
the REST API's serializer calls it to return field errors before anything reaches the cluster.
Defaults are applied here exactly as the CRD applies them.

Unknown fields are ignored by default, as the API server prunes them; ``strict=True`` reports them
instead (useful for a REST client's typo such as ``maxvalue``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sentinel_core.compare import Compare, check_exclusive, parse_compare
from sentinel_core.durations import MIN_INTERVAL_SECONDS, check_interval, parse_duration
from sentinel_core.provider import parse_provider
from sentinel_core.thresholds import (
    Baseline,
    Increase,
    MinSamples,
    max_value_required,
    parse_thresholds,
)
from sentinel_core.values import integer, number

# Re-exported: the spec's dataclasses are all importable from here.
__all__ = [
    "MIN_INTERVAL_SECONDS",
    "Baseline",
    "Compare",
    "Increase",
    "MinSamples",
    "check_interval",
    "parse_duration",
]

DEFAULT_TARGET_KIND = "Deployment"
DEFAULT_INTERVAL = "30s"
DEFAULT_INTERVAL_SECONDS = 30.0
DEFAULT_FAILURE_LIMIT = 3
# Size limits against abuse (SPEC §3.1), the CRD's maxItems / maxLength: one analysis must not
# make the operator send dozens of queries per evaluation, or a query of megabytes.
MAX_METRICS = 20
MAX_QUERY_LENGTH = 4096
MAX_METRIC_NAME_LENGTH = 63
MAX_NOTIFY = 10
# The CRD declares failureLimit as int32.
_MAX_FAILURE_LIMIT = 2**31 - 1

_TARGET_KINDS = ("Deployment",)
# Patterns copied from crds/rolloutanalysis.yaml so that both sides agree on every string; the
# REST API's and the admin's field validators use them too (anchored, for regex validators).
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_SPEC_FIELDS = frozenset(
    {"target", "metrics", "interval", "failureLimit", "dryRun", "failureWindow", "notify"}
)
_TARGET_FIELDS = frozenset({"kind", "name"})
_METRIC_FIELDS = frozenset(
    {"name", "query", "maxValue", "maxIncrease", "baseline", "minSamples", "provider", "compare"}
)
# The CRD's CEL message, word for word.
_MAX_VALUE_REQUIRED = "is required unless maxIncrease or compare is given"
# The CRD's maximum: status.window holds up to this many verdicts.
MAX_FAILURE_WINDOW = 100


@dataclass(frozen=True)
class FieldError:
    """One problem with one field, named by its path (``spec.metrics[1].name``)."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


class InvalidSpecError(ValueError):
    """A spec broke one or more rules; ``errors`` lists every one of them, in field order.

    ``summary`` holds what could be read of it all the same, for the mirror and the UI.
    """

    def __init__(
        self,
        errors: list[FieldError] | tuple[FieldError, ...],
        summary: SpecSummary | None = None,
    ) -> None:
        self.errors: tuple[FieldError, ...] = tuple(errors)
        self.summary = summary or SpecSummary()
        super().__init__("; ".join(str(error) for error in self.errors) or "invalid spec")

    def by_field(self) -> dict[str, list[str]]:
        """Return the messages grouped by field path, the shape DRF uses for field errors."""
        grouped: dict[str, list[str]] = {}
        for error in self.errors:
            grouped.setdefault(error.field, []).append(error.message)
        return grouped


@dataclass(frozen=True)
class SpecSummary:
    """The columns the mirror keeps of a spec, also of an invalid one.

    Parts that parsed are as written (an interval under the 5 s minimum included); the rest are
    the CRD's defaults, so a broken spec still lists and sorts sensibly.
    """

    target_name: str = ""
    metrics: tuple[MetricSpec, ...] = ()
    interval_seconds: float = DEFAULT_INTERVAL_SECONDS
    failure_limit: int = DEFAULT_FAILURE_LIMIT
    dry_run: bool = False
    failure_window: int | None = None


@dataclass(frozen=True)
class Target:
    """The workload an analysis guards, in the analysis's own namespace."""

    kind: str
    name: str


@dataclass(frozen=True)
class MetricSpec:
    """One PromQL query and what it may return: under ``maxValue``, within ``maxIncrease``."""

    name: str
    query: str
    # At least one of max_value and max_increase is set (SPEC §3.1); baseline comes with
    # max_increase.
    max_value: float | None = None
    max_increase: Increase | None = None
    baseline: Baseline | None = None
    min_samples: MinSamples | None = None
    # As written; None is the operator's ``default`` provider (SPEC §10.1).
    provider: str | None = None
    # New pods against old pods (SPEC §3.2); excludes max_value and max_increase.
    compare: Compare | None = None

    def to_dict(self) -> dict[str, object]:
        """Return the metric in the custom resource's ``spec.metrics[]`` shape."""
        out: dict[str, object] = {"name": self.name, "query": self.query}
        if self.max_value is not None:
            out["maxValue"] = self.max_value
        if self.max_increase is not None:
            out["maxIncrease"] = self.max_increase.to_dict()
        if self.baseline is not None:
            out["baseline"] = self.baseline.to_dict()
        if self.min_samples is not None:
            out["minSamples"] = self.min_samples.to_dict()
        if self.provider is not None:
            out["provider"] = self.provider
        if self.compare is not None:
            out["compare"] = self.compare.to_dict()
        return out


@dataclass(frozen=True)
class AnalysisSpec:
    """A validated spec with the CRD defaults applied."""

    target: Target
    metrics: tuple[MetricSpec, ...]
    # The duration as written (``1m30s``), kept so the spec round-trips unchanged.
    interval: str = DEFAULT_INTERVAL
    interval_seconds: float = DEFAULT_INTERVAL_SECONDS
    failure_limit: int = DEFAULT_FAILURE_LIMIT
    dry_run: bool = False
    # M-of-N counting (SPEC §3.1): None keeps consecutive counting.
    failure_window: int | None = None
    # Notification channel names (SPEC §14); the operator's configuration defines them.
    notify: tuple[str, ...] = ()

    @property
    def summary(self) -> SpecSummary:
        return SpecSummary(
            target_name=self.target.name,
            metrics=self.metrics,
            interval_seconds=self.interval_seconds,
            failure_limit=self.failure_limit,
            dry_run=self.dry_run,
            failure_window=self.failure_window,
        )

    def to_dict(self) -> dict[str, Any]:
        """Return the spec in the custom resource's shape, defaults written out."""
        out: dict[str, Any] = {
            "target": {"kind": self.target.kind, "name": self.target.name},
            "metrics": [m.to_dict() for m in self.metrics],
            "interval": self.interval,
            "failureLimit": self.failure_limit,
            "dryRun": self.dry_run,
        }
        if self.failure_window is not None:
            out["failureWindow"] = self.failure_window
        if self.notify:
            out["notify"] = list(self.notify)
        return out


def parse_spec(raw: object, *, path: str = "spec", strict: bool = False) -> AnalysisSpec:
    """Return the ``AnalysisSpec`` of a raw spec dict, or raise ``InvalidSpecError``.

    Every broken rule is reported, not only the first, each under its field path (prefixed with
    ``path``). With ``strict``, unknown fields are errors rather than silently dropped.
    """
    errors: list[FieldError] = []
    if not isinstance(raw, Mapping):
        raise InvalidSpecError([FieldError(path, "must be an object")])
    if strict:
        _unknown_fields(raw, _SPEC_FIELDS, path, errors)

    target = _parse_target(raw.get("target"), f"{path}.target", strict, errors)
    metrics = _parse_metrics(raw.get("metrics"), f"{path}.metrics", strict, errors)

    interval = raw.get("interval", DEFAULT_INTERVAL)
    interval_seconds = DEFAULT_INTERVAL_SECONDS
    if not isinstance(interval, str):
        errors.append(FieldError(f"{path}.interval", "must be a duration string such as 30s"))
    else:
        try:
            interval_seconds = parse_duration(interval)
            check_interval(interval_seconds, interval)
        except ValueError as exc:
            errors.append(FieldError(f"{path}.interval", str(exc)))

    failure_limit = integer(raw.get("failureLimit", DEFAULT_FAILURE_LIMIT))
    if failure_limit is None:
        errors.append(FieldError(f"{path}.failureLimit", "must be an integer"))
    elif not 1 <= failure_limit <= _MAX_FAILURE_LIMIT:
        errors.append(
            FieldError(f"{path}.failureLimit", f"must be between 1 and {_MAX_FAILURE_LIMIT}")
        )

    dry_run = raw.get("dryRun", False)
    if not isinstance(dry_run, bool):
        errors.append(FieldError(f"{path}.dryRun", "must be true or false"))
    notify = _parse_notify(raw.get("notify", []), f"{path}.notify", errors)

    failure_window = _parse_failure_window(raw, path, failure_limit, errors)

    if errors:
        raw_target = raw.get("target")
        target_name = raw_target.get("name") if isinstance(raw_target, Mapping) else None
        summary = SpecSummary(
            target_name=target_name if isinstance(target_name, str) else "",
            metrics=tuple(metrics),
            interval_seconds=interval_seconds,
            failure_limit=failure_limit
            if failure_limit is not None and 1 <= failure_limit <= _MAX_FAILURE_LIMIT
            else DEFAULT_FAILURE_LIMIT,
            dry_run=dry_run is True,
            failure_window=failure_window,
        )
        raise InvalidSpecError(errors, summary)
    assert target is not None and failure_limit is not None  # guaranteed when no errors
    return AnalysisSpec(
        target=target,
        metrics=tuple(metrics),
        interval=interval,
        interval_seconds=interval_seconds,
        failure_limit=failure_limit,
        dry_run=dry_run,
        failure_window=failure_window,
        notify=notify,
    )


def _parse_failure_window(
    raw: Mapping[str, Any], path: str, failure_limit: int | None, errors: list[FieldError]
) -> int | None:
    if raw.get("failureWindow") is None:
        return None
    window = integer(raw["failureWindow"])
    field = f"{path}.failureWindow"
    if window is None:
        errors.append(FieldError(field, "must be an integer"))
        return None
    ok = True
    if not 1 <= window <= MAX_FAILURE_WINDOW:
        errors.append(FieldError(field, f"must be between 1 and {MAX_FAILURE_WINDOW}"))
        ok = False
    # The CRD's CEL rule; the API server checks it after defaulting failureLimit.
    if failure_limit is not None and window < failure_limit:
        errors.append(FieldError(field, "must be at least failureLimit"))
        ok = False
    return window if ok else None


def _parse_notify(raw: object, path: str, errors: list[FieldError]) -> tuple[str, ...]:
    # Names only: which channels exist is the operator's configuration, checked in Ready.
    if not isinstance(raw, list):
        errors.append(FieldError(path, "must be a list of channel names"))
        return ()
    if len(raw) > MAX_NOTIFY:
        errors.append(FieldError(path, f"must have at most {MAX_NOTIFY} items"))
    names: list[str] = []
    for index, name in enumerate(raw):
        if not isinstance(name, str) or len(name) > 63 or not DNS1123_LABEL.fullmatch(name):
            errors.append(
                FieldError(
                    f"{path}[{index}]",
                    "must be a DNS-1123 label: at most 63 lower-case letters, digits and '-', "
                    "starting and ending with a letter or digit",
                )
            )
        elif name in names:
            errors.append(FieldError(f"{path}[{index}]", f"duplicate channel name {name!r}"))
        else:
            names.append(name)
    return tuple(names)


def _parse_target(raw: object, path: str, strict: bool, errors: list[FieldError]) -> Target | None:
    if raw is None:
        errors.append(FieldError(path, "is required"))
        return None
    if not isinstance(raw, Mapping):
        errors.append(FieldError(path, "must be an object with kind and name"))
        return None
    if strict:
        _unknown_fields(raw, _TARGET_FIELDS, path, errors)
    kind = raw.get("kind", DEFAULT_TARGET_KIND)
    ok = True
    if kind not in _TARGET_KINDS:
        errors.append(
            FieldError(
                f"{path}.kind", f"must be one of {', '.join(_TARGET_KINDS)}, got {_shown(kind)}"
            )
        )
        ok = False
    name = raw.get("name")
    if name is None or name == "":
        errors.append(FieldError(f"{path}.name", "is required"))
        ok = False
    elif not isinstance(name, str) or len(name) > 253 or not DNS1123_SUBDOMAIN.fullmatch(name):
        errors.append(
            FieldError(
                f"{path}.name",
                "must be a Kubernetes object name: at most 253 lower-case letters, digits, "
                "'-' and '.', starting and ending with a letter or digit",
            )
        )
        ok = False
    return Target(kind=kind, name=name) if ok else None


def _parse_metrics(
    raw: object, path: str, strict: bool, errors: list[FieldError]
) -> list[MetricSpec]:
    if raw is None:
        errors.append(FieldError(path, "is required"))
        return []
    if not isinstance(raw, list):
        errors.append(FieldError(path, "must be a list of metrics"))
        return []
    if not raw:
        errors.append(FieldError(path, "must contain at least one metric"))
        return []
    if len(raw) > MAX_METRICS:
        # The API server's wording for maxItems; the items are still checked, as it does.
        errors.append(FieldError(path, f"must have at most {MAX_METRICS} items"))
    metrics: list[MetricSpec] = []
    first_index: dict[str, int] = {}
    for index, item in enumerate(raw):
        item_path = f"{path}[{index}]"
        if not isinstance(item, Mapping):
            errors.append(FieldError(item_path, "must be an object with name, query and maxValue"))
            continue
        if strict:
            _unknown_fields(item, _METRIC_FIELDS, item_path, errors)
        before = len(errors)
        name = item.get("name")
        if name is None or name == "":
            errors.append(FieldError(f"{item_path}.name", "is required"))
        elif (
            not isinstance(name, str)
            or len(name) > MAX_METRIC_NAME_LENGTH
            or not DNS1123_LABEL.fullmatch(name)
        ):
            errors.append(
                FieldError(
                    f"{item_path}.name",
                    "must be a DNS-1123 label: at most 63 lower-case letters, digits and '-', "
                    "starting and ending with a letter or digit",
                )
            )
        elif name in first_index:
            errors.append(
                FieldError(
                    f"{item_path}.name",
                    f"duplicate name {name!r}, already used by {path}[{first_index[name]}]",
                )
            )
        else:
            first_index[name] = index
        query = item.get("query")
        if query is None or query == "":
            errors.append(FieldError(f"{item_path}.query", "is required"))
        elif not isinstance(query, str) or not query.strip():
            errors.append(FieldError(f"{item_path}.query", "must be a non-empty PromQL string"))
        elif len(query) > MAX_QUERY_LENGTH:
            # Counted in characters, as the API server counts maxLength (it says "bytes").
            errors.append(
                FieldError(
                    f"{item_path}.query", f"may not be more than {MAX_QUERY_LENGTH} characters"
                )
            )
        raw_max = item.get("maxValue")
        max_value = number(raw_max)
        if raw_max is None:
            if max_value_required(item):
                errors.append(FieldError(f"{item_path}.maxValue", _MAX_VALUE_REQUIRED))
        elif max_value is None:
            errors.append(FieldError(f"{item_path}.maxValue", "must be a finite number"))
        add = lambda field, message: errors.append(FieldError(field, message))  # noqa: E731
        extra = parse_thresholds(
            item,
            item_path,
            strict=strict,
            parse_duration=parse_duration,
            add=add,
        )
        compare = parse_compare(
            item.get("compare"),
            f"{item_path}.compare",
            strict=strict,
            parse_duration=parse_duration,
            add=add,
        )
        check_exclusive(item, item_path, add)
        provider = parse_provider(item, item_path, add)
        if len(errors) == before:
            metrics.append(
                MetricSpec(
                    name=name,
                    query=query,
                    max_value=max_value,
                    max_increase=extra.max_increase,
                    baseline=extra.baseline,
                    min_samples=extra.min_samples,
                    provider=provider,
                    compare=compare,
                )
            )
    return metrics


def _shown(value: object) -> str:
    """Return a short text of a wrong value; a big or nested one must not bloat the message."""
    if isinstance(value, str):
        return repr(value) if len(value) <= 64 else repr(value[:64]) + "…"
    return f"a {type(value).__name__}" if isinstance(value, list | dict) else repr(value)[:64]


def _unknown_fields(
    raw: Mapping[Any, Any], known: frozenset[str], path: str, errors: list[FieldError]
) -> None:
    for key in raw:
        if key not in known:
            errors.append(FieldError(f"{path}.{key}", "unknown field"))
