"""A CRD's CEL validation rules (``x-kubernetes-validations``), as kube-apiserver applies them.

``schema.validate`` calls ``validate`` after the structural checks, and only when none of them
is blocking (kube-apiserver skips the rules then, and says so). Each rule is evaluated with
``self`` bound to its node, by cel-python (a well-kept implementation of the CEL spec); a rule
that evaluates to false gives a cause worded like apiextensions-apiserver's: the node's path plus
the rule's ``fieldPath``, its ``reason`` (default ``FieldValueInvalid``), and its ``message``.

Not covered (no CRD here uses them): transition rules (``oldSelf``), ``messageExpression``, cost
limits, and Kubernetes' CEL extension libraries beyond the standard functions.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

import celpy

from devcluster.gofmt import go_value

_REQUIRED, _FORBIDDEN, _INVALID = "FieldValueRequired", "FieldValueForbidden", "FieldValueInvalid"
_RULES = "x-kubernetes-validations"


def has_rules(node: object) -> bool:
    """Return whether a schema holds any CEL rule, at any depth."""
    if isinstance(node, Mapping):
        return _RULES in node or any(has_rules(value) for value in node.values())
    if isinstance(node, list):
        return any(has_rules(value) for value in node)
    return False


def validate(schema: Mapping[str, Any], data: Any, path: str) -> Iterator[tuple[str, str, str]]:
    """Yield (reason, field, message) for every rule ``data`` breaks, parents before children."""
    if data is None:
        return
    for rule in schema.get(_RULES) or ():
        if "oldSelf" in rule.get("rule", "") or _holds(rule["rule"], data):
            continue
        field = f"{path}{rule.get('fieldPath', '')}" if path else rule.get("fieldPath", "")[1:]
        yield _cause(rule, field, data)
    if isinstance(data, dict):
        properties = schema.get("properties") or {}
        for key, value in data.items():
            child = properties.get(key)
            if child is None and isinstance(schema.get("additionalProperties"), Mapping):
                child = schema["additionalProperties"]
            if child is not None:
                yield from validate(child, value, f"{path}.{key}" if path else key)
    elif isinstance(data, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(data):
            yield from validate(schema["items"], item, f"{path}[{index}]")


def _cause(rule: Mapping[str, Any], field: str, data: Any) -> tuple[str, str, str]:
    reason = rule.get("reason") or _INVALID
    message = rule.get("message") or f"failed rule: {rule['rule']}"
    if reason == _REQUIRED:
        return reason, field, f"Required value: {message}"
    if reason == _FORBIDDEN:
        return reason, field, f"Forbidden: {message}"
    # apiextensions-apiserver shows a scalar's value and leaves an object's or a list's out.
    if isinstance(data, dict | list):
        return reason, field, f"Invalid value: {message}"
    return reason, field, f"Invalid value: {go_value(data)}: {message}"


def _holds(expression: str, data: Any) -> bool:
    try:
        result = _program(expression).evaluate({"self": celpy.json_to_cel(data)})
    except celpy.CELEvalError:
        # kube-apiserver reports an evaluation error as a failure of the rule.
        return False
    return not isinstance(result, celpy.CELEvalError) and bool(result)


@lru_cache(maxsize=256)
def _program(expression: str) -> celpy.Runner:
    environment = celpy.Environment()
    return environment.program(environment.compile(expression))
