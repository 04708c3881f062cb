"""Parse the ``spec.metrics`` list: each metric's name, query, limits and provider.

The fields are described in docs/resource.md.

Each metric kind parses its own fields (``sentinel_core.metric_kinds.parse_fields``: the
threshold's ``maxIncrease``, ``baseline``, ``minSamples``, ``compare``, ``sequential``); this
module checks the metric's own fields and assembles ``MetricSpec``.
"""

from __future__ import annotations

from collections.abc import Mapping

from sentinel_core import metric_kinds
from sentinel_core.provider import parse_provider
from sentinel_core.spec._durations import parse_duration
from sentinel_core.spec._errors import FieldError, report_unknown_fields
from sentinel_core.spec._names import DNS1123_LABEL
from sentinel_core.spec._types import MetricSpec
from sentinel_core.values import number

# Size limits against abuse (docs/resource.md), the CRD's maxItems / maxLength: one analysis must
# not make the operator send dozens of queries per evaluation, or a query of megabytes.
MAX_METRICS = 20
MAX_QUERY_LENGTH = 4096
MAX_METRIC_NAME_LENGTH = 63
_METRIC_FIELDS = frozenset(
    {
        "name",
        "query",
        "maxValue",
        "maxIncrease",
        "baseline",
        "minSamples",
        "provider",
        "compare",
        "sequential",
    }
)
# The CRD's CEL message, word for word.
_MAX_VALUE_REQUIRED = "is required unless maxIncrease or compare is given"


def parse_metrics(
    raw: object, path: str, strict: bool, errors: list[FieldError]
) -> list[MetricSpec]:
    """Return the metrics of ``spec.metrics`` that parsed, adding an error for each broken rule."""
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
            report_unknown_fields(item, _METRIC_FIELDS, item_path, errors)
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
        if query is None:
            # Required unless sequential is given: check_sequential_exclusive says so.
            query = ""
        elif query == "":
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
            if not metric_kinds.bounded(item):
                errors.append(FieldError(f"{item_path}.maxValue", _MAX_VALUE_REQUIRED))
        elif max_value is None:
            errors.append(FieldError(f"{item_path}.maxValue", "must be a finite number"))
        add = lambda field, message: errors.append(FieldError(field, message))  # noqa: E731
        # Each kind's own fields (threshold, compare, sequential), in the registry's order.
        fields = metric_kinds.parse_fields(
            item, item_path, strict=strict, parse_duration=parse_duration, add=add
        )
        provider = parse_provider(item, item_path, add)
        if len(errors) == before:
            metrics.append(
                MetricSpec(
                    name=name,
                    query=query,
                    max_value=max_value,
                    provider=provider,
                    **fields,  # type: ignore[arg-type]
                )
            )
    return metrics
