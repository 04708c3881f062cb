"""Resolve an analysis's templates into the spec ``parse_spec`` reads (docs/templates.md).

``template_refs`` says which templates an analysis names (what the reconciler reads);
``resolve`` takes the analysis's raw spec, its namespace and the templates read, and returns
the spec with the templates' metrics and defaults in it, or raises ``TemplateError`` with a
stable reason. Pure: the templates are handed in, nothing is read here.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sentinel_core.conditions import Reason
from sentinel_core.spec import DEFAULT_TARGET_KIND, FieldError, InvalidSpecError, parse_spec
from sentinel_core.templates._placeholders import PlaceholderError, lookup_in, substitute

# Cap against abuse: every template named is read at each evaluation.
MAX_TEMPLATES = 10
MAX_ARGS = 50
# The fields a template gives its analyses when they set none.
DEFAULTED = ("interval", "failureLimit", "failureWindow", "falsePauseRate")
_BUILTINS = ("namespace", "target.kind", "target.name")


@dataclass(frozen=True)
class TemplateRef:
    """One entry of ``spec.templates``: a template's name and whether it is cluster-scoped."""

    name: str
    cluster_scope: bool = False

    @property
    def kind(self) -> str:
        """Return the template's kind."""
        return "ClusterRolloutAnalysisTemplate" if self.cluster_scope else "RolloutAnalysisTemplate"

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"


@dataclass(frozen=True)
class Template:
    """A template as read from the cluster: its ``metadata.generation`` and raw ``spec``."""

    ref: TemplateRef
    generation: int
    spec: Mapping[str, Any]


@dataclass(frozen=True)
class UsedTemplate:
    """One entry of ``status.templates``: which generation of a template the spec came from."""

    name: str
    cluster_scope: bool
    generation: int

    def to_dict(self) -> dict[str, Any]:
        """Return the status entry."""
        return {
            "name": self.name,
            "clusterScope": self.cluster_scope,
            "generation": self.generation,
        }


@dataclass(frozen=True)
class Resolved:
    """The resolved raw spec, the templates used, and where each metric came from.

    ``origins`` maps a metric's name to its template, or to None for the analysis's own.
    """

    spec: dict[str, Any]
    templates: tuple[UsedTemplate, ...] = ()
    origins: Mapping[str, TemplateRef | None] = field(default_factory=dict)


class TemplateError(ValueError):
    """The templates could not be resolved: ``reason`` (docs/status.md) and a message naming it."""

    def __init__(self, reason: Reason, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class TemplateSpecError(InvalidSpecError):
    """The spec of an analysis whose templates could not be resolved, as the decision core
    reads it: ``Ready=False`` with ``reason`` and ``message`` (docs/status.md)."""

    def __init__(self, error: TemplateError) -> None:
        super().__init__([FieldError("spec.templates", error.message)])
        self.reason = error.reason
        self.message = error.message


def template_refs(raw_spec: Mapping[str, Any]) -> tuple[TemplateRef, ...]:
    """Return the templates ``spec.templates`` names, in order; raise ``TemplateError``
    (``InvalidSpec``) when the list is malformed."""
    if not isinstance(raw_spec, Mapping):
        raise TemplateError(Reason.INVALID_SPEC, "spec: must be an object")
    raw = raw_spec.get("templates", [])
    if not isinstance(raw, list):
        raise TemplateError(Reason.INVALID_SPEC, "spec.templates: must be a list")
    if len(raw) > MAX_TEMPLATES:
        raise TemplateError(Reason.INVALID_SPEC, f"spec.templates: at most {MAX_TEMPLATES}")
    refs: list[TemplateRef] = []
    for index, item in enumerate(raw):
        where = f"spec.templates[{index}]"
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            raise TemplateError(Reason.INVALID_SPEC, f"{where}.name: is required")
        scope = item.get("clusterScope", False)
        if not isinstance(scope, bool):
            raise TemplateError(Reason.INVALID_SPEC, f"{where}.clusterScope: must be true or false")
        ref = TemplateRef(item["name"], scope)
        if ref in refs:
            raise TemplateError(Reason.INVALID_SPEC, f"{where}: {ref} is named twice")
        refs.append(ref)
    return tuple(refs)


def _given_args(raw_spec: Mapping[str, Any]) -> dict[str, str]:
    raw = raw_spec.get("args", [])
    if not isinstance(raw, list) or len(raw) > MAX_ARGS:
        raise TemplateError(Reason.INVALID_SPEC, f"spec.args: must be a list of at most {MAX_ARGS}")
    given: dict[str, str] = {}
    for index, item in enumerate(raw):
        where = f"spec.args[{index}]"
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            raise TemplateError(Reason.INVALID_SPEC, f"{where}.name: is required")
        if not isinstance(item.get("value"), str):
            raise TemplateError(Reason.INVALID_SPEC, f"{where}.value: must be a string")
        if item["name"] in given:
            raise TemplateError(Reason.INVALID_SPEC, f"{where}: {item['name']} is given twice")
        given[item["name"]] = item["value"]
    return given


def _declared(template: Template) -> dict[str, str | None]:
    """Return the template's declared args with their defaults (None: none)."""
    raw = template.spec.get("args", [])
    declared: dict[str, str | None] = {}
    if not isinstance(raw, list):
        raise TemplateError(Reason.INVALID_TEMPLATE, f"{template.ref}: spec.args must be a list")
    for item in raw:
        name = item.get("name") if isinstance(item, Mapping) else None
        default = item.get("default") if isinstance(item, Mapping) else None
        if not isinstance(name, str) or not (default is None or isinstance(default, str)):
            raise TemplateError(
                Reason.INVALID_TEMPLATE, f"{template.ref}: spec.args holds a malformed entry"
            )
        declared[name] = default
    return declared


def _substituted(node: Any, lookup: Any, where: str) -> Any:
    if isinstance(node, str):
        return substitute(node, lookup, where)
    if isinstance(node, Mapping):
        return {key: _substituted(value, lookup, f"{where}.{key}") for key, value in node.items()}
    if isinstance(node, list):
        return [_substituted(value, lookup, f"{where}[{i}]") for i, value in enumerate(node)]
    return node


def _metrics_of(template: Template, values: dict[str, str]) -> list[dict[str, Any]]:
    metrics = template.spec.get("metrics")
    if not isinstance(metrics, list) or not metrics:
        raise TemplateError(Reason.INVALID_TEMPLATE, f"{template.ref}: spec.metrics is empty")
    lookup = lookup_in(values)
    resolved = []
    for item in metrics:
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            raise TemplateError(Reason.INVALID_TEMPLATE, f"{template.ref}: a metric has no name")
        where = f"{template.ref}, metric {item['name']}"
        try:
            fields = {
                key: value if key == "name" else _substituted(value, lookup, f"{where}: {key}")
                for key, value in item.items()
            }
        except PlaceholderError as exc:
            if exc.unknown is not None:
                raise TemplateError(
                    Reason.INVALID_TEMPLATE,
                    f"{where}: uses {{{{ {exc.unknown} }}}}, which is neither an argument the "
                    f"template declares nor one of {{{{ namespace }}}}, {{{{ target.kind }}}}, "
                    "{{ target.name }}",
                ) from exc
            raise TemplateError(Reason.INVALID_TEMPLATE, str(exc)) from exc
        resolved.append(copy.deepcopy(fields))
    return resolved


def _builtins(raw_spec: Mapping[str, Any], namespace: str) -> dict[str, str]:
    target = raw_spec.get("target")
    target = target if isinstance(target, Mapping) else {}
    kind, name = target.get("kind", DEFAULT_TARGET_KIND), target.get("name", "")
    return {
        "namespace": namespace,
        "target.kind": kind if isinstance(kind, str) else "",
        "target.name": name if isinstance(name, str) else "",
    }


def resolve(
    raw_spec: Mapping[str, Any], namespace: str, templates: Mapping[TemplateRef, Template]
) -> Resolved:
    """Return the analysis's spec with its templates resolved, or raise ``TemplateError``.

    ``templates`` holds the templates read for ``template_refs(raw_spec)``; one missing there
    is ``TemplateNotFound``. The metrics come in the order of ``spec.templates``, then the
    analysis's own; ``interval``, ``failureLimit``, ``failureWindow`` and ``falsePauseRate``
    are the analysis's, else the templates' (which must agree). A result ``parse_spec`` refuses
    on a template's part is ``InvalidTemplate``; one refused on the analysis's own fields is
    returned as it is, for the caller's ``parse_spec`` to report as ``InvalidSpec``.
    """
    if not isinstance(raw_spec, Mapping):
        raise TemplateError(Reason.INVALID_SPEC, "spec: must be an object")
    refs = template_refs(raw_spec)
    given = _given_args(raw_spec)
    spec = {key: copy.deepcopy(value) for key, value in raw_spec.items()}
    spec.pop("templates", None)
    spec.pop("args", None)
    if not refs:
        if given:
            raise TemplateError(Reason.INVALID_SPEC, "spec.args: given, but no template is named")
        return Resolved(spec, (), {m["name"]: None for m in _own_metrics(spec)})

    builtins = _builtins(raw_spec, namespace)
    metrics: list[dict[str, Any]] = []
    origins: dict[str, TemplateRef | None] = {}
    by_index: list[TemplateRef | None] = []
    defaults: dict[str, tuple[Any, TemplateRef]] = {}
    declared_anywhere: set[str] = set()
    used: list[UsedTemplate] = []
    for ref in refs:
        template = templates.get(ref)
        if template is None:
            raise TemplateError(Reason.TEMPLATE_NOT_FOUND, _not_found(ref, namespace))
        if not isinstance(template.spec, Mapping):
            raise TemplateError(Reason.INVALID_TEMPLATE, f"{ref}: spec must be an object")
        declared = _declared(template)
        declared_anywhere |= set(declared)
        values = dict(builtins)
        for name, default in declared.items():
            value = given.get(name, default)
            if value is None:
                raise TemplateError(
                    Reason.MISSING_ARGUMENT,
                    f"{ref} needs the argument {name}, which spec.args does not give and the "
                    "template has no default for",
                )
            values[f"args.{name}"] = value
        for item in _metrics_of(template, values):
            _add(item, ref, metrics, origins, by_index)
        for key in DEFAULTED:
            if key in template.spec and key not in raw_spec:
                if key in defaults and defaults[key][0] != template.spec[key]:
                    first, other = defaults[key]
                    raise TemplateError(
                        Reason.INVALID_TEMPLATE,
                        f"{other} and {ref} give different {key}s ({first!r} and "
                        f"{template.spec[key]!r}): set spec.{key} in the analysis",
                    )
                defaults.setdefault(key, (template.spec[key], ref))
        used.append(UsedTemplate(ref.name, ref.cluster_scope, template.generation))
    unknown = sorted(set(given) - declared_anywhere)
    if unknown:
        raise TemplateError(
            Reason.INVALID_SPEC,
            f"spec.args: {', '.join(unknown)} is declared by none of the templates "
            f"({', '.join(str(ref) for ref in refs)})",
        )
    own = spec.get("metrics", [])
    if isinstance(own, list):
        for item in own:
            if isinstance(item, Mapping) and isinstance(item.get("name"), str):
                _add(item, None, metrics, origins, by_index)
            else:
                # Kept for parse_spec to report as the analysis's own InvalidSpec.
                metrics.append(item)
                by_index.append(None)
        spec["metrics"] = metrics
    # else: the analysis's metrics are malformed; left as they are for parse_spec to report.
    for key, (value, _) in defaults.items():
        spec[key] = copy.deepcopy(value)
    _check(spec, by_index, {key: ref for key, (_, ref) in defaults.items()})
    return Resolved(spec, tuple(used), origins)


def _not_found(ref: TemplateRef, namespace: str) -> str:
    if ref.cluster_scope:
        return f"{ref} not found"
    return f"{ref} not found in namespace {namespace}"


def _own_metrics(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    own = spec.get("metrics", [])
    if not isinstance(own, list):
        return []
    return [item for item in own if isinstance(item, Mapping) and isinstance(item.get("name"), str)]


def _add(
    item: dict[str, Any],
    ref: TemplateRef | None,
    metrics: list[dict[str, Any]],
    origins: dict[str, TemplateRef | None],
    by_index: list[TemplateRef | None],
) -> None:
    name = item["name"]
    if name in origins:
        first = origins[name]
        raise TemplateError(
            Reason.INVALID_TEMPLATE,
            f"metric {name} is defined twice: by {first or 'the analysis'} and by "
            f"{ref or 'the analysis'}",
        )
    origins[name] = ref
    by_index.append(ref)
    metrics.append(item)


def _check(
    spec: dict[str, Any],
    by_index: list[TemplateRef | None],
    defaulted_by: dict[str, TemplateRef],
) -> None:
    """Raise ``InvalidTemplate`` when ``parse_spec`` refuses a part a template contributed."""
    try:
        parse_spec(spec)
    except InvalidSpecError as exc:
        blamed = []
        for error in exc.errors:
            ref, shown = _blame(error.field, spec, by_index, defaulted_by)
            if ref is not None:
                blamed.append(f"{ref}, {shown}: {error.message}")
        if blamed:
            raise TemplateError(Reason.INVALID_TEMPLATE, "; ".join(blamed)) from exc


def _blame(
    path: str,
    spec: Mapping[str, Any],
    by_index: list[TemplateRef | None],
    defaulted_by: dict[str, TemplateRef],
) -> tuple[TemplateRef | None, str]:
    """Return the template a field error belongs to (None: the analysis) and the field shown."""
    prefix = "spec.metrics["
    if path.startswith(prefix):
        index_text, _, rest = path[len(prefix) :].partition("]")
        if index_text.isdigit() and int(index_text) < len(by_index):
            index = int(index_text)
            if by_index[index] is None:
                return None, path
            return by_index[index], f"metric {spec['metrics'][index]['name']}{rest}"
    if path == "spec.metrics" and any(by_index):
        return next(
            ref for ref in by_index if ref is not None
        ), "spec.metrics (with the analysis's)"
    key = path.removeprefix("spec.")
    if key in defaulted_by:
        return defaulted_by[key], f"spec.{key}"
    return None, path
