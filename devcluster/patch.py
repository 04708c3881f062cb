"""Apply PATCH bodies to stored objects: JSON merge patch, JSON patch and strategic merge patch.

The devcluster request handlers call these pure functions with the stored object (a JSON-like
dict) and the decoded request body; they return a new object and never mutate their arguments.
A body the API server would refuse raises :class:`PatchError`, which carries the HTTP status,
reason and message the real server answers with, so the handler can render a ``Status`` as is.

The three algorithms mirror the libraries the Kubernetes API server links:

* ``application/merge-patch+json`` - RFC 7386 (evanphx/json-patch ``MergePatch``);
* ``application/json-patch+json`` - RFC 6902 (evanphx/json-patch v4 ``Patch.Apply``, with its
  error texts and its support for negative array indices);
* ``application/strategic-merge-patch+json`` - k8s.io/apimachinery ``strategicpatch``
  (``StrategicMergeMapPatch``), driven by :data:`STRATEGIC_PATCH_FIELDS`, the
  ``patchStrategy``/``patchMergeKey`` struct tags of the built-in kinds as a data table.

This module is longer than most because one helper owns all three patch kinds and their shared
error type; the strategic part is the bulk and follows patch.go function by function so that
behaviour can be checked against it.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "STRATEGIC_PATCH_FIELDS",
    "PatchError",
    "json_merge_patch",
    "json_patch",
    "strategic_merge_patch",
    "supports_strategic",
]


class PatchError(Exception):
    """A patch the API server refuses; ``status`` is the HTTP code it answers with.

    ``reason`` is the Kubernetes ``StatusReason`` ("" for the plain errors the server reports as
    500 with reason Unknown), ``message`` the Status message and ``cause`` the detail message
    the server puts in ``details.causes`` (only for 422 answers built by NewGenericServerResponse).
    """

    def __init__(self, status: int, message: str, *, reason: str = "", cause: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.reason = reason
        self.cause = cause

    def status_body(self) -> dict[str, Any]:
        """Return the ``Status`` object the API server would send for this error."""
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "code": self.status,
        }
        if self.reason:
            body["reason"] = self.reason
        if self.cause:
            body["details"] = {"causes": [{"message": self.cause}]}
        return body


def _bad_request(message: str) -> PatchError:
    return PatchError(400, message, reason="BadRequest")


def _unprocessable(detail: str) -> PatchError:
    # apierrors.NewGenericServerResponse(422, ...) keeps the library text only as a cause.
    return PatchError(
        422,
        "the server rejected our request due to an error in our request",
        reason="Invalid",
        cause=detail,
    )


def _internal(message: str) -> PatchError:
    # A plain Go error from the patch library becomes a 500 Status with an empty reason.
    return PatchError(500, message)


# --------------------------------------------------------------------------------------------
# RFC 7386 JSON merge patch
# --------------------------------------------------------------------------------------------


def json_merge_patch(target: Any, patch: Any) -> Any:
    """Return ``target`` with the RFC 7386 merge ``patch`` applied (null deletes a member)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = json_merge_patch(result.get(key), value)
    return result


# --------------------------------------------------------------------------------------------
# RFC 6902 JSON patch
# --------------------------------------------------------------------------------------------

_MISSING = object()
_GO_INT = re.compile(r"^[+-]?[0-9]+$")


def _go_json_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return "string"


def json_patch(target: Any, operations: Any) -> Any:
    """Return ``target`` with the RFC 6902 ``operations`` applied, all or nothing."""
    if operations is None:
        return copy.deepcopy(target)
    if not isinstance(operations, list):
        kind = _go_json_kind(operations)
        raise _bad_request(f"json: cannot unmarshal {kind} into Go value of type jsonpatch.Patch")
    for operation in operations:
        if not isinstance(operation, dict):
            kind = _go_json_kind(operation)
            raise _bad_request(
                f"json: cannot unmarshal {kind} into Go value of type jsonpatch.Operation"
            )
    doc = copy.deepcopy(target)
    for operation in operations:
        doc = _apply_operation(doc, operation)
    return doc


def _decode_pointer(pointer: str) -> list[str] | None:
    """Split an RFC 6901 pointer into unescaped tokens; None when it is not a pointer."""
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        return None
    return [token.replace("~1", "/").replace("~0", "~") for token in pointer.split("/")[1:]]


def _operation_field(operation: Mapping[str, Any], name: str, op: str) -> str:
    value = operation.get(name)
    if not isinstance(value, str):
        raise _unprocessable(f"{op} operation failed to decode {name}: missing value")
    return value


def _parent(doc: Any, tokens: list[str]) -> Any:
    """Return the container holding the last token, or _MISSING (evanphx findObject)."""
    current = doc
    for token in tokens[:-1]:
        if isinstance(current, dict):
            current = current.get(token, _MISSING)
        elif isinstance(current, list):
            index = _array_index(token, len(current), allow_end=False)
            current = current[index] if isinstance(index, int) else _MISSING
        else:
            return _MISSING
        if current is _MISSING or current is None:
            return _MISSING
    return current


def _array_index(token: str, length: int, *, allow_end: bool) -> int | str:
    """Resolve an array token; return the message of the failure as a str."""
    if not _GO_INT.match(token):  # what strconv.Atoi accepts
        return f"value was not a proper array index: '{token}'"
    index = int(token)
    size = length + 1 if allow_end else length
    if index >= size or index < -size:
        return f"Unable to access invalid index: {index}: invalid index referenced"
    return index + size if index < 0 else index


def _get(container: Any, key: str) -> Any:
    if isinstance(container, dict):
        return container.get(key, _MISSING)
    index = _array_index(key, len(container), allow_end=False)
    if isinstance(index, str):
        raise _unprocessable(index)
    return container[index]


def _add(container: Any, key: str, value: Any, path: str, op: str) -> None:
    if isinstance(container, dict):
        container[key] = value
        return
    if key == "-":
        container.append(value)
        return
    index = _array_index(key, len(container), allow_end=True)
    if isinstance(index, str):
        raise _unprocessable(f"error in {op} for path: '{path}': {index}")
    container.insert(index, value)


def _remove(container: Any, key: str, path: str, op: str) -> Any:
    if isinstance(container, dict):
        if key not in container:
            raise _unprocessable(
                f"error in {op} for path: '{path}': Unable to remove nonexistent key: {key}: "
                "missing value"
            )
        return container.pop(key)
    index = _array_index(key, len(container), allow_end=False)
    if isinstance(index, str):
        raise _unprocessable(f"error in {op} for path: '{path}': {index}")
    return container.pop(index)


def _apply_operation(doc: Any, operation: Mapping[str, Any]) -> Any:
    op = operation.get("op")
    if op not in ("add", "remove", "replace", "move", "copy", "test"):
        raise _unprocessable(f"Unexpected kind: {op if isinstance(op, str) else 'unknown'}")
    path = _operation_field(operation, "path", op)
    value = copy.deepcopy(operation.get("value"))
    tokens = _decode_pointer(path)
    if op == "test":
        return _test(doc, tokens, path, operation)
    if op in ("move", "copy"):
        source = _operation_field(operation, "from", op)
        from_tokens = _decode_pointer(source)
        holder = _parent(doc, from_tokens) if from_tokens else _MISSING
        if holder is _MISSING:
            raise _unprocessable(
                f"{op} operation does not apply: doc is missing from path: {source}: missing value"
            )
        # evanphx v4 reads a missing object member as null instead of failing.
        found = _get(holder, from_tokens[-1])
        value = None if found is _MISSING else copy.deepcopy(found)
        if op == "move":
            _remove(holder, from_tokens[-1], from_tokens[-1], op)
        if tokens == []:
            return value
        holder = _parent(doc, tokens) if tokens else _MISSING
        if holder is _MISSING:
            raise _unprocessable(
                f"{op} operation does not apply: doc is missing destination path: {path}: "
                "missing value"
            )
        _add(holder, tokens[-1], value, path, op)
        return doc
    if tokens == [] and op in ("add", "replace"):
        return value
    holder = _parent(doc, tokens) if tokens else _MISSING
    if op == "add":
        if holder is _MISSING:
            raise _unprocessable(
                f'add operation does not apply: doc is missing path: "{path}": missing value'
            )
        _add(holder, tokens[-1], value, path, op)
    elif op == "remove":
        if holder is _MISSING:
            raise _unprocessable(
                f'remove operation does not apply: doc is missing path: "{path}": missing value'
            )
        _remove(holder, tokens[-1], path, op)
    else:
        if holder is _MISSING:
            raise _unprocessable(
                f"replace operation does not apply: doc is missing path: {path}: missing value"
            )
        if isinstance(holder, dict):
            # evanphx v4 lets replace create a missing object member.
            holder[tokens[-1]] = value
        else:
            index = _array_index(tokens[-1], len(holder), allow_end=False)
            if isinstance(index, str):
                raise _unprocessable(
                    f"replace operation does not apply: doc is missing key: {path}: missing value"
                )
            holder[index] = value
    return doc


def _test(doc: Any, tokens: list[str] | None, path: str, operation: Mapping[str, Any]) -> Any:
    failed = f"testing value {path} failed: test failed"
    if tokens == []:
        if not _json_equal(doc, operation.get("value")):
            raise _unprocessable(failed)
        return doc
    holder = _parent(doc, tokens) if tokens else _MISSING
    if holder is _MISSING:
        raise _unprocessable(
            f"test operation does not apply: is missing path: {path}: missing value"
        )
    found = _get(holder, tokens[-1])
    if found is _MISSING or found is None:
        if operation.get("value") is None:
            return doc
        raise _unprocessable(failed)
    if not _json_equal(found, operation.get("value")):
        raise _unprocessable(failed)
    return doc


def _json_equal(left: Any, right: Any) -> bool:
    """Compare JSON values structurally (1 equals 1.0, True never equals 1)."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_json_equal(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(_json_equal, left, right))
    return type(left) is type(right) and left == right


# --------------------------------------------------------------------------------------------
# Strategic merge patch: the patchStrategy/patchMergeKey table
# --------------------------------------------------------------------------------------------

_CONTAINER_LISTS: dict[str, tuple[str, str]] = {
    "ports": ("merge", "containerPort"),
    "env": ("merge", "name"),
    "volumeMounts": ("merge", "mountPath"),
    "volumeDevices": ("merge", "devicePath"),
}
_POD_SPEC_FIELDS: dict[str, tuple[str, str]] = {
    "volumes": ("merge,retainKeys", "name"),
    "initContainers": ("merge", "name"),
    "containers": ("merge", "name"),
    "ephemeralContainers": ("merge", "name"),
    "imagePullSecrets": ("merge", "name"),
    "hostAliases": ("merge", "ip"),
    "topologySpreadConstraints": ("merge", "topologyKey"),
    "schedulingGates": ("merge", "name"),
    "resourceClaims": ("merge,retainKeys", "name"),
    **{
        f"{containers}.{field}": strategy
        for containers in ("initContainers", "containers", "ephemeralContainers")
        for field, strategy in _CONTAINER_LISTS.items()
    },
}
_OBJECT_META_FIELDS: dict[str, tuple[str, str]] = {
    "finalizers": ("merge", ""),
    "ownerReferences": ("merge", "uid"),
}


def _prefixed(prefix: str, fields: Mapping[str, tuple[str, str]]) -> dict[str, tuple[str, str]]:
    return {f"{prefix}.{path}": strategy for path, strategy in fields.items()}


_METADATA = _prefixed("metadata", _OBJECT_META_FIELDS)
_POD_TEMPLATE = {
    **_prefixed("metadata", _OBJECT_META_FIELDS),
    **_prefixed("spec", _POD_SPEC_FIELDS),
}

STRATEGIC_PATCH_FIELDS: dict[tuple[str, str], dict[str, tuple[str, str]]] = {
    ("apps", "Deployment"): {
        **_METADATA,
        "spec.strategy": ("retainKeys", ""),
        **_prefixed("spec.template", _POD_TEMPLATE),
        "status.conditions": ("merge", "type"),
    },
    ("", "Pod"): {
        **_METADATA,
        **_prefixed("spec", _POD_SPEC_FIELDS),
        "status.conditions": ("merge", "type"),
    },
    ("", "Namespace"): {**_METADATA, "status.conditions": ("merge", "type")},
    ("", "ServiceAccount"): {**_METADATA, "secrets": ("merge", "name")},
    ("", "ConfigMap"): _METADATA,
    ("", "Secret"): _METADATA,
    ("", "Event"): _METADATA,
    ("events.k8s.io", "Event"): _METADATA,
    ("coordination.k8s.io", "Lease"): _METADATA,
    ("rbac.authorization.k8s.io", "Role"): _METADATA,
    ("rbac.authorization.k8s.io", "ClusterRole"): _METADATA,
    ("rbac.authorization.k8s.io", "RoleBinding"): _METADATA,
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): _METADATA,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): _METADATA,
}
"""``patchStrategy`` and ``patchMergeKey`` struct tags of the built-in kinds devcluster serves.

Keyed by (group, kind), then by the dotted field path from the object root (list elements add
no path segment). Fields not listed are maps merged key by key and lists replaced whole, as for
untagged Go fields. Taken from k8s.io/api core/v1, apps/v1 and meta/v1 types.go.
"""

_UNSUPPORTED_MEDIA = (
    "the body of the request was in an unknown format - accepted media types include: "
    "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
)


def supports_strategic(group: str, kind: str) -> bool:
    """Return whether the API server accepts a strategic merge patch for this kind."""
    return (group, kind) in STRATEGIC_PATCH_FIELDS


def strategic_merge_patch(target: Any, patch: Any, group: str, kind: str) -> Any:
    """Return ``target`` with a strategic merge ``patch`` applied as the API server does.

    Custom resources (any kind outside :data:`STRATEGIC_PATCH_FIELDS`) get the server's 415.
    """
    fields = STRATEGIC_PATCH_FIELDS.get((group, kind))
    if fields is None:
        raise PatchError(415, _UNSUPPORTED_MEDIA, reason="UnsupportedMediaType")
    if patch is None:
        return copy.deepcopy(target)
    if not isinstance(patch, dict):
        kind_name = _go_json_kind(patch)
        raise _bad_request(
            f"json: cannot unmarshal {kind_name} into Go value of type map[string]interface {{}}"
        )
    original = copy.deepcopy(target) if isinstance(target, dict) else {}
    merged = _Strategic(fields).merge_map(original, copy.deepcopy(patch), "")
    return _as_typed(merged)


# --------------------------------------------------------------------------------------------
# Strategic merge patch: the algorithm of k8s.io/apimachinery/pkg/util/strategicpatch/patch.go
# --------------------------------------------------------------------------------------------

_DIRECTIVE = "$patch"
_RETAIN_KEYS = "$retainKeys"
_DELETE_FROM_PRIMITIVE = "$deleteFromPrimitiveList"
_SET_ELEMENT_ORDER = "$setElementOrder"
_ERR_PRIMITIVE_LIST = "invalid patch format of primitive list"
_ERR_RETAIN_KEYS = "invalid patch format of retainKeys"
_ERR_SET_ORDER = "invalid patch format of setElementOrder list"


def _go_value(value: Any) -> str:
    """Format a JSON value the way Go's %v prints the decoded interface{}."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{_go_value(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(_go_value(v) for v in value) + "]"
    return str(value)


def _go_type(value: Any) -> str:
    """Name the Go type json.Unmarshal (with PreserveInts) gives a JSON value."""
    if isinstance(value, dict):
        return "map[string]interface {}"
    if isinstance(value, list):
        return "[]interface {}"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    return "<nil>"


def _bad_arg_type(expected: str, actual: Any) -> PatchError:
    return _internal(f"expected a {expected}, but received a {_go_type(actual)}")


def _no_merge_key(item: Any, merge_key: str) -> PatchError:
    return _internal(f"map: {_go_value(item)} does not contain declared merge key: {merge_key}")


def _same(left: Any, right: Any) -> bool:
    """Compare scalars as Go compares two interface{} values: same type and same value."""
    return type(left) is type(right) and left == right


def _extract_key(key: str, prefix: str) -> str:
    head, sep, rest = key.partition("/")
    if not sep or head != prefix:
        raise _bad_request(
            _ERR_PRIMITIVE_LIST if prefix == _DELETE_FROM_PRIMITIVE else _ERR_SET_ORDER
        )
    return rest


def _element_kind(*lists: list[Any]) -> str:
    """Return the common Go type of all elements (sliceElementType)."""
    found: str | None = None
    for items in lists:
        for item in items:
            current = _go_type(item)
            if found is None:
                found = current
                if isinstance(item, list):
                    raise _unprocessable("lists of lists are not supported")
            elif current != found:
                shown = "[" + " ".join(_go_value(list(items)) for items in lists) + "]"
                raise _internal(f"list element types are not identical: {shown}")
    if found is None:
        raise _internal("no elements in any of the given slices")
    return found


_MAP = "map[string]interface {}"


def _dedupe_scalars(items: list[Any]) -> list[Any]:
    """Remove duplicates with Go's swap-with-last algorithm (order is fixed up afterwards)."""
    items = list(items)
    length = len(items) - 1
    i = 0
    while i < length:
        j = i + 1
        while j <= length:
            if _same(items[i], items[j]):
                items[j] = items[length]
                items = items[:length]
                length -= 1
                j -= 1
            j += 1
        i += 1
    return items


def _index(items: list[Any], value: Any, merge_key: str, kind: str) -> int:
    def key_of(item: Any) -> Any:
        if kind == _MAP:
            return item.get(merge_key) if isinstance(item, dict) else None
        return item

    wanted = key_of(value)
    for position, item in enumerate(items):
        if _same(wanted, key_of(item)):
            return position
    return -1


def _has_merge_key(merge_key: str, *lists: list[Any]) -> None:
    for items in lists:
        for item in items:
            if not isinstance(item, dict):
                raise _bad_arg_type(_MAP, item)
            if merge_key not in item:
                raise _no_merge_key(item, merge_key)


def _is_delete_directive(item: Any) -> bool:
    return isinstance(item, dict) and item.get(_DIRECTIVE) == "delete"


def _normalize_slice_order(
    to_sort: list[Any], order: list[Any], merge_key: str, kind: str
) -> list[Any]:
    """Sort ``to_sort`` by position in ``order`` exactly as sort.SliceStable does for it."""
    to_delete: list[Any] = []
    if kind == _MAP:
        _has_merge_key(merge_key, to_sort, order)
        to_delete = [item for item in to_sort if _is_delete_directive(item)]
        to_sort = [item for item in to_sort if not _is_delete_directive(item)]

    def less(left: Any, right: Any) -> bool:
        # patch.go's comparator: items missing from ``order`` compare as smaller.
        left_at = _index(order, left, merge_key, kind)
        if left_at >= 0:
            right_at = _index(order, right, merge_key, kind)
            if right_at >= 0:
                return left_at < right_at
        return True

    items = list(to_sort)
    for i in range(1, len(items)):  # Go's stable sort is an insertion sort for short lists
        j = i
        while j > 0 and less(items[j], items[j - 1]):
            items[j], items[j - 1] = items[j - 1], items[j]
            j -= 1
    return items + to_delete


def _merge_sorted(
    left: list[Any], right: list[Any], server_order: list[Any], merge_key: str, kind: str
) -> list[Any]:
    """Interleave server-only items (left) into patch items (right) by live-object order."""
    merged: list[Any] = []
    i = j = 0
    while i < len(left) or j < len(right):
        if i >= len(left):
            merged.append(right[j])
            j += 1
        elif j >= len(right):
            merged.append(left[i])
            i += 1
        else:
            left_at = _index(server_order, left[i], merge_key, kind)
            right_at = _index(server_order, right[j], merge_key, kind)
            if left_at >= 0 and right_at >= 0 and left_at < right_at:
                merged.append(left[i])
                i += 1
            else:
                merged.append(right[j])
                j += 1
    return merged


def _partition(
    merged: list[Any], present: list[Any], merge_key: str
) -> tuple[list[Any], list[Any]]:
    """Split ``merged`` into items named in ``present`` and server-only items."""
    in_patch: list[Any] = []
    server_only: list[Any] = []
    for item in merged:
        if merge_key:
            if not isinstance(item, dict):
                raise _bad_arg_type(_MAP, item)
            if merge_key not in item:
                raise _no_merge_key(item, merge_key)
            hit = any(
                isinstance(p, dict) and merge_key in p and _same(p[merge_key], item[merge_key])
                for p in present
            )
        else:
            hit = any(_same(p, item) for p in present)
        (in_patch if hit else server_only).append(item)
    return in_patch, server_only


def _normalize_element_order(
    patch_items: list[Any],
    server_only: list[Any],
    patch_order: list[Any],
    server_order: list[Any],
    merge_key: str,
    kind: str,
) -> list[Any]:
    patch_items = _normalize_slice_order(patch_items, patch_order, merge_key, kind)
    server_only = _normalize_slice_order(server_only, server_order, merge_key, kind)
    return _merge_sorted(server_only, patch_items, server_order, merge_key, kind)


def _discard_nulls(value: Any) -> Any:
    """Drop null members at any depth (discardNullValuesFromPatch)."""
    if isinstance(value, dict):
        return {k: _discard_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_discard_nulls(v) for v in value]
    return value


def _remove_directives(value: Any) -> Any:
    """Drop every map carrying ``$patch`` (removeDirectives); _MISSING when value is one."""
    if isinstance(value, dict):
        if _DIRECTIVE in value:
            return _MISSING
        kept = {k: _remove_directives(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v is not _MISSING}
    if isinstance(value, list):
        kept_items = [_remove_directives(v) for v in value]
        return [v for v in kept_items if v is not _MISSING]
    return value


def _is_directive_key(key: str) -> bool:
    return key in (_DIRECTIVE, _RETAIN_KEYS) or key.startswith(
        (_SET_ELEMENT_ORDER + "/", _DELETE_FROM_PRIMITIVE + "/")
    )


def _as_typed(value: Any) -> Any:
    """Drop directive keys and null members, as the server's decode into the Go type does."""
    if isinstance(value, dict):
        return {
            k: _as_typed(v) for k, v in value.items() if v is not None and not _is_directive_key(k)
        }
    if isinstance(value, list):
        return [_as_typed(v) for v in value]
    return value


class _Strategic:
    """StrategicMergeMapPatch with MergeParallelList and IgnoreUnmatchedNulls, as applied."""

    def __init__(self, fields: Mapping[str, tuple[str, str]]) -> None:
        self._fields = fields

    def _lookup(self, path: str) -> tuple[str, str]:
        strategies, merge_key = self._fields.get(path, ("", ""))
        others = [s for s in strategies.split(",") if s and s != "retainKeys"]
        return (others[0] if others else ""), merge_key

    def merge_map(self, original: dict[str, Any], patch: dict[str, Any], path: str) -> Any:
        if _DIRECTIVE in patch:
            directive = patch[_DIRECTIVE]
            if directive == "replace":
                del patch[_DIRECTIVE]
                return patch
            if directive == "delete":
                return {}
            raise _internal(
                f"unknown patch type: {_go_value(directive)} in map: {_go_value(patch)}"
            )
        self._apply_retain_keys(original, patch)
        self._merge_set_element_order(original, patch, path)
        for key, value in list(patch.items()):
            is_delete_list = False
            if key.startswith(_DELETE_FROM_PRIMITIVE):
                key = _extract_key(key, _DELETE_FROM_PRIMITIVE)
                is_delete_list = True
            if value is None:
                original.pop(key, None)
                continue
            current = original.get(key, _MISSING)
            if current is _MISSING or _go_type(current) != _go_type(value):
                # A value new to the object is taken from the patch, minus nulls and minus
                # anything marked with $patch; a parallel deletion list never adds anything.
                if not is_delete_list:
                    cleaned = _remove_directives(_discard_nulls(value))
                    if cleaned is _MISSING:
                        original.pop(key, None)
                    else:
                        original[key] = cleaned
                continue
            child = f"{path}.{key}" if path else key
            if isinstance(current, dict):
                strategy, _ = self._lookup(child)
                original[key] = (
                    value if strategy == "replace" else self.merge_map(current, value, child)
                )
            elif isinstance(current, list):
                original[key] = self._merge_slice_handler(current, value, child, is_delete_list)
            else:
                original[key] = value
        return original

    def _apply_retain_keys(self, original: dict[str, Any], patch: dict[str, Any]) -> None:
        if _RETAIN_KEYS not in patch:
            return
        retain = patch.pop(_RETAIN_KEYS)
        if not isinstance(retain, list):
            raise _bad_request(_ERR_RETAIN_KEYS)
        keep = [k for k in retain if isinstance(k, str)]
        for key, value in patch.items():
            if value is None or key.startswith((_DELETE_FROM_PRIMITIVE, _SET_ELEMENT_ORDER)):
                continue
            if key not in keep:
                raise _bad_request(_ERR_RETAIN_KEYS)
        for key in list(original):
            if key not in keep:
                del original[key]

    def _merge_set_element_order(
        self, original: dict[str, Any], patch: dict[str, Any], path: str
    ) -> None:
        for key in [k for k in patch if k.startswith(_SET_ELEMENT_ORDER)]:
            order = patch.pop(key)
            if not isinstance(order, list):
                raise _bad_arg_type("[]interface {}", order)
            field = _extract_key(key, _SET_ELEMENT_ORDER)
            found_original, found_patch = field in original, field in patch
            current, wanted = original.get(field), patch.get(field)
            if found_original and not isinstance(current, list):
                raise _bad_arg_type("[]interface {}", current)
            if found_patch and not isinstance(wanted, list):
                raise _bad_arg_type("[]interface {}", wanted)
            current_list: list[Any] = current if found_original else []
            wanted_list: list[Any] = wanted if found_patch else []
            child = f"{path}.{field}" if path else field
            _, merge_key = self._lookup(child)
            _check_set_order(wanted_list, order, merge_key)
            if found_original and not found_patch:
                merged = current_list
            elif found_patch and not found_original:
                merged = wanted_list
            elif found_original and found_patch:
                merged = self._merge_slice_handler(current_list, wanted_list, child, False)
            else:
                continue
            in_patch, server_only = _partition(merged, order, merge_key)
            kind = _element_kind(current_list, wanted_list)
            original[field] = _normalize_element_order(
                in_patch, server_only, order, current_list, merge_key, kind
            )
            patch.pop(field, None)

    def _merge_slice_handler(
        self, original: list[Any], patch: list[Any], path: str, is_delete_list: bool
    ) -> list[Any]:
        strategy, merge_key = self._lookup(path)
        if strategy != "merge":
            return patch
        return self._merge_slice(original, patch, merge_key, path, is_delete_list)

    def _merge_slice(
        self,
        original: list[Any],
        patch: list[Any],
        merge_key: str,
        path: str,
        is_delete_list: bool,
    ) -> list[Any]:
        if not original and not patch:
            return original
        kind = _element_kind(original, patch)
        if kind != _MAP:
            if is_delete_list:
                return [v for v in original if not any(_same(v, d) for d in patch)]
            merged = _dedupe_scalars(original + patch)
        else:
            if not merge_key:
                raise _internal("cannot merge lists without merge key for type struct")
            original, patch = _without_special_elements(original, patch, merge_key)
            merged = list(original)
            for item in patch:
                if merge_key not in item:
                    raise _no_merge_key(item, merge_key)
                position = next(
                    (
                        at
                        for at, existing in enumerate(merged)
                        if merge_key in existing and _same(existing[merge_key], item[merge_key])
                    ),
                    -1,
                )
                if position >= 0:
                    merged[position] = self.merge_map(merged[position], item, path)
                else:
                    merged.append(item)
        in_patch, server_only = _partition(merged, patch, merge_key)
        return _normalize_element_order(in_patch, server_only, patch, original, merge_key, kind)


def _without_special_elements(
    original: list[Any], patch: list[Any], merge_key: str
) -> tuple[list[Any], list[Any]]:
    """Apply ``$patch: delete|replace`` list elements (mergeSliceWithSpecialElements)."""
    plain: list[Any] = []
    replace = False
    for item in patch:
        if _DIRECTIVE not in item:
            plain.append(item)
            continue
        directive = item[_DIRECTIVE]
        if directive == "delete":
            if merge_key not in item:
                raise _no_merge_key(item, merge_key)
            original = [
                e for e in original if not (merge_key in e and _same(e[merge_key], item[merge_key]))
            ]
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise _internal("merging lists cannot yet be specified in the patch")
        else:
            raise _internal(f"unknown patch type: {_go_value(directive)} in map: {_go_value(item)}")
    if replace:
        return plain, []
    return original, plain


def _check_set_order(patch_list: list[Any], order: list[Any], merge_key: str) -> None:
    """Check the patch list is a subsequence of the $setElementOrder list."""
    if not order or not patch_list:
        return
    if merge_key:
        for item in patch_list:
            if not isinstance(item, dict):
                raise _bad_arg_type(_MAP, item)
        items = [item for item in patch_list if not _is_delete_directive(item)]
    else:
        items = patch_list
    at_patch = at_order = 0
    while at_patch < len(items) and at_order < len(order):
        item = items[at_patch]
        if isinstance(item, dict) and _DIRECTIVE in item:
            at_patch += 1
            continue
        if _merge_key_equal(item, order[at_order], merge_key):
            at_patch += 1
        at_order += 1
    if at_patch < len(items) and at_order >= len(order):
        raise _internal(
            f"The order in patch list:\n{_go_value(patch_list)}\n doesn't match "
            f"{_SET_ELEMENT_ORDER} list:\n{_go_value(order)}\n"
        )


def _merge_key_equal(left: Any, right: Any, merge_key: str) -> bool:
    if not merge_key:
        return _same(left, right)
    for item in (left, right):
        if not isinstance(item, dict):
            raise _bad_arg_type(_MAP, item)
        if merge_key not in item:
            raise _no_merge_key(item, merge_key)
    return _same(left[merge_key], right[merge_key])
