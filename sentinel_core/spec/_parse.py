"""Parse and validate a RolloutAnalysis ``spec`` into a typed, frozen ``AnalysisSpec``.

This module is the single source of the spec rules of docs/resource.md (the same ones the CRD's
schema enforces in the API server): the reconciler calls ``parse_spec`` on every resource it
reads, and the REST API's serializer calls it to return field errors before anything reaches the
cluster. Defaults are applied here exactly as the CRD applies them.

Unknown fields are ignored by default, as the API server prunes them; ``strict=True`` reports them
instead (useful for a REST client's typo such as ``maxvalue``).

The package's ``__init__`` is the spec's public surface; the metrics' rules live in
``_metrics``, the dataclasses in ``_types``, the errors in ``_errors``, the name patterns in
``_names`` and the durations in ``_durations``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sentinel_core import metric_kinds
from sentinel_core.kinds import KINDS, default_by
from sentinel_core.metric_kinds.sequential import parse_false_pause_rate
from sentinel_core.spec._durations import check_interval, parse_duration
from sentinel_core.spec._errors import (
    FieldError,
    InvalidSpecError,
    report_unknown_fields,
    shown_value,
)
from sentinel_core.spec._metrics import (
    parse_metrics,
)
from sentinel_core.spec._names import DNS1123_LABEL, DNS1123_SUBDOMAIN
from sentinel_core.spec._types import (
    DEFAULT_FAILURE_LIMIT,
    DEFAULT_INTERVAL,
    DEFAULT_INTERVAL_SECONDS,
    DEFAULT_TARGET_KIND,
    AnalysisSpec,
    MetricSpec,
    SpecSummary,
    Target,
)
from sentinel_core.values import integer

MAX_NOTIFY = 10
# The CRD declares failureLimit as int32.
_MAX_FAILURE_LIMIT = 2**31 - 1

_TARGET_KINDS = KINDS
_SPEC_FIELDS = frozenset(
    {"target", "metrics", "interval", "failureLimit", "dryRun", "failureWindow", "notify"}
    | {"falsePauseRate"}
)
_TARGET_FIELDS = frozenset({"kind", "name"})
# The CRD's maximum: status.window holds up to this many verdicts.
MAX_FAILURE_WINDOW = 100


def parse_spec(raw: object, *, path: str = "spec", strict: bool = False) -> AnalysisSpec:
    """Return the ``AnalysisSpec`` of a raw spec dict, or raise ``InvalidSpecError``.

    Every broken rule is reported, not only the first, each under its field path (prefixed with
    ``path``). With ``strict``, unknown fields are errors rather than silently dropped.
    """
    errors: list[FieldError] = []
    if not isinstance(raw, Mapping):
        raise InvalidSpecError([FieldError(path, "must be an object")])
    if strict:
        report_unknown_fields(raw, _SPEC_FIELDS, path, errors)

    target = _parse_target(raw.get("target"), f"{path}.target", strict, errors)
    metrics = parse_metrics(raw.get("metrics"), f"{path}.metrics", strict, errors)
    if target is not None:
        metrics = _kind_defaults(metrics, raw.get("metrics"), target.kind)

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
    false_pause_rate = parse_false_pause_rate(
        raw.get("falsePauseRate"),
        f"{path}.falsePauseRate",
        lambda field, message: errors.append(FieldError(field, message)),
    )

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
        false_pause_rate=false_pause_rate,
    )


def _kind_defaults(metrics: list[MetricSpec], raw: object, kind: str) -> list[MetricSpec]:
    """Give each metric the defaults that depend on the target's kind (its metric kind's).

    The CRD cannot default a field from another field (``compare.by`` and ``sequential.by``
    from the target's kind), so they are filled in here, where both are known
    (docs/resource.md#new-pods-against-old-pods).
    """
    # Keyed by name: a metric that parsed has a unique string name (anything else was refused).
    items = {
        name: item
        for item in (raw if isinstance(raw, list) else ())
        if isinstance(item, Mapping) and isinstance(name := item.get("name"), str)
    }
    by = default_by(kind)
    return [metric_kinds.kind_of(m).targeted(m, items.get(m.name, {}), by) for m in metrics]


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
        report_unknown_fields(raw, _TARGET_FIELDS, path, errors)
    kind = raw.get("kind", DEFAULT_TARGET_KIND)
    ok = True
    if kind not in _TARGET_KINDS:
        errors.append(
            FieldError(
                f"{path}.kind",
                f"must be one of {', '.join(_TARGET_KINDS)}, got {shown_value(kind)}",
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
