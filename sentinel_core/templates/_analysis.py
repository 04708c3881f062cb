"""Check a spec that names templates before it is written, as the CRD does (docs/templates.md).

The REST API and the admin call ``parse_analysis_spec`` where they called ``parse_spec``. A spec
naming no template is ``parse_spec``'s. One naming templates cannot be resolved here (the
templates are the cluster's, read by the operator at each evaluation), so what is checked is
what the API server checks: the shape of ``templates`` and ``args``, and the analysis's own
fields by ``parse_spec``'s rules. It is written as given, so that the templates' defaults
apply; a missing template or argument is the operator's ``Ready=False`` afterwards.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sentinel_core.spec import (
    AnalysisSpec,
    FieldError,
    InvalidSpecError,
    MetricSpec,
    Target,
    parse_spec,
)
from sentinel_core.templates._resolve import (
    TemplateError,
    TemplateRef,
    _given_args,
    template_refs,
)

# Stands in for the metrics the templates give, so that parse_spec can read an analysis with
# none of its own (and only then, so no name of the analysis's can meet it); never returned.
_PROBE_METRIC = {"name": "from-templates", "query": "vector(0)", "maxValue": 0}


@dataclass(frozen=True)
class TemplatedSpec:
    """A spec naming templates, checked: its own ``target`` and ``metrics`` parsed, the whole
    kept as written (``to_dict``)."""

    raw: Mapping[str, Any]
    target: Target
    # The analysis's own metrics only; the templates' are known once the operator resolves them.
    metrics: tuple[MetricSpec, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Return the spec as written: no default filled in, so the templates' apply."""
        return copy.deepcopy(dict(self.raw))


def names_templates(raw: object) -> bool:
    """Return whether the raw spec ``raw`` names templates or gives arguments."""
    return isinstance(raw, Mapping) and ("templates" in raw or "args" in raw)


def parse_analysis_spec(raw: object, *, strict: bool = False) -> AnalysisSpec | TemplatedSpec:
    """Return ``parse_spec(raw)`` for a spec naming no template, else its ``TemplatedSpec``;
    raise ``InvalidSpecError`` with every problem under its field path."""
    if not names_templates(raw):
        return parse_spec(raw, strict=strict)
    assert isinstance(raw, Mapping)
    errors: list[FieldError] = []
    refs: tuple[TemplateRef, ...] = ()
    try:
        refs = template_refs(raw)
    except TemplateError as exc:
        errors.append(_field_error(exc.message))
    try:
        _given_args(raw)
    except TemplateError as exc:
        errors.append(_field_error(exc.message))
    probe = {key: value for key, value in raw.items() if key not in ("templates", "args")}
    if not refs and not errors:
        if raw.get("args"):
            raise InvalidSpecError([FieldError("spec.args", "given, but no template is named")])
        # An empty templates list (and no args): an ordinary spec.
        return parse_spec(probe, strict=strict)
    probed = probe.get("metrics") in (None, [])
    if probed:
        probe["metrics"] = [_PROBE_METRIC]
    if "failureLimit" not in probe:
        # A template may give failureLimit: read as 1 here, as the CRD's rule does.
        probe["failureLimit"] = 1
    parsed: AnalysisSpec | None = None
    try:
        parsed = parse_spec(probe, strict=strict)
    except InvalidSpecError as exc:
        errors.extend(exc.errors)
    if errors or parsed is None:
        raise InvalidSpecError(errors)
    return TemplatedSpec(raw=raw, target=parsed.target, metrics=() if probed else parsed.metrics)


def _field_error(message: str) -> FieldError:
    # TemplateError's messages start with the field they are about ("spec.args[0].value: ...").
    where, sep, rest = message.partition(": ")
    if sep and where.startswith("spec."):
        return FieldError(where, rest)
    return FieldError("spec.templates", message)
