"""Apply strategic merge patches to stored objects as the Kubernetes API server does.

patching.py calls :func:`strategic_merge_patch` for ``application/strategic-merge-patch+json``
bodies and :func:`supports_strategic` to tell built-in kinds from custom resources. The algorithm
is k8s.io/apimachinery ``strategicpatch`` (``StrategicMergeMapPatch``), driven by
:data:`STRATEGIC_PATCH_FIELDS` (strategic_keys.py). It follows patch.go function by function so
that behaviour can be checked against it, which is why this module is longer than most. Errors
are the :class:`devcluster.patch.PatchError` the server would answer with.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from devcluster.patch import (
    PatchError,
    bad_request,
    go_json_kind,
    internal_error,
    unprocessable,
)
from devcluster.strategic_keys import STRATEGIC_PATCH_FIELDS

__all__ = ["STRATEGIC_PATCH_FIELDS", "strategic_merge_patch", "supports_strategic"]

_MISSING = object()

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
        kind_name = go_json_kind(patch)
        raise bad_request(
            f"json: cannot unmarshal {kind_name} into Go value of type map[string]interface {{}}"
        )
    original = copy.deepcopy(target) if isinstance(target, dict) else {}
    merged = _Strategic(fields).merge_map(original, copy.deepcopy(patch), "")
    return _as_typed(merged)


# --------------------------------------------------------------------------------------------
# The algorithm of k8s.io/apimachinery/pkg/util/strategicpatch/patch.go
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
    return internal_error(f"expected a {expected}, but received a {_go_type(actual)}")


def _no_merge_key(item: Any, merge_key: str) -> PatchError:
    return internal_error(
        f"map: {_go_value(item)} does not contain declared merge key: {merge_key}"
    )


def _same(left: Any, right: Any) -> bool:
    """Compare scalars as Go compares two interface{} values: same type and same value."""
    return type(left) is type(right) and left == right


def _extract_key(key: str, prefix: str) -> str:
    head, sep, rest = key.partition("/")
    if not sep or head != prefix:
        raise bad_request(
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
                    raise unprocessable("lists of lists are not supported")
            elif current != found:
                shown = "[" + " ".join(_go_value(list(items)) for items in lists) + "]"
                raise internal_error(f"list element types are not identical: {shown}")
    if found is None:
        raise internal_error("no elements in any of the given slices")
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
            raise internal_error(
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
            raise bad_request(_ERR_RETAIN_KEYS)
        keep = [k for k in retain if isinstance(k, str)]
        for key, value in patch.items():
            if value is None or key.startswith((_DELETE_FROM_PRIMITIVE, _SET_ELEMENT_ORDER)):
                continue
            if key not in keep:
                raise bad_request(_ERR_RETAIN_KEYS)
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
                raise internal_error("cannot merge lists without merge key for type struct")
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
            raise internal_error("merging lists cannot yet be specified in the patch")
        else:
            raise internal_error(
                f"unknown patch type: {_go_value(directive)} in map: {_go_value(item)}"
            )
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
        raise internal_error(
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
