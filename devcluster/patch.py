"""Apply JSON merge patches and JSON patches to stored objects, and define the patch error type.

The devcluster request handlers (patching.py) call these pure functions with the stored object (a
JSON-like dict) and the decoded request body; they return a new object and never mutate their
arguments. A body the API server would refuse raises :class:`PatchError`, which carries the HTTP
status, reason and message the real server answers with, so the handler can render a ``Status``
as is. strategic.py (strategic merge patch) builds its errors with the constructors here.

The algorithms mirror the libraries the Kubernetes API server links:

* ``application/merge-patch+json`` - RFC 7386 (evanphx/json-patch ``MergePatch``);
* ``application/json-patch+json`` - RFC 6902 (evanphx/json-patch v4 ``Patch.Apply``, with its
  error texts and its support for negative array indices).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "PatchError",
    "bad_request",
    "go_json_kind",
    "internal_error",
    "json_merge_patch",
    "json_patch",
    "unprocessable",
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


def bad_request(message: str) -> PatchError:
    """Return the 400 BadRequest the server sends for a body it cannot decode."""
    return PatchError(400, message, reason="BadRequest")


def unprocessable(detail: str) -> PatchError:
    """Return the 422 Invalid the server sends when the patch library rejects the body."""
    # apierrors.NewGenericServerResponse(422, ...) keeps the library text only as a cause.
    return PatchError(
        422,
        "the server rejected our request due to an error in our request",
        reason="Invalid",
        cause=detail,
    )


def internal_error(message: str) -> PatchError:
    """Return the 500 the server sends for a plain Go error from the patch library."""
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


def go_json_kind(value: Any) -> str:
    """Name a JSON value's kind as encoding/json's UnmarshalTypeError does ("object", "array")."""
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
        kind = go_json_kind(operations)
        raise bad_request(f"json: cannot unmarshal {kind} into Go value of type jsonpatch.Patch")
    for operation in operations:
        if not isinstance(operation, dict):
            kind = go_json_kind(operation)
            raise bad_request(
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
        raise unprocessable(f"{op} operation failed to decode {name}: missing value")
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
        raise unprocessable(index)
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
        raise unprocessable(f"error in {op} for path: '{path}': {index}")
    container.insert(index, value)


def _remove(container: Any, key: str, path: str, op: str) -> Any:
    if isinstance(container, dict):
        if key not in container:
            raise unprocessable(
                f"error in {op} for path: '{path}': Unable to remove nonexistent key: {key}: "
                "missing value"
            )
        return container.pop(key)
    index = _array_index(key, len(container), allow_end=False)
    if isinstance(index, str):
        raise unprocessable(f"error in {op} for path: '{path}': {index}")
    return container.pop(index)


def _apply_operation(doc: Any, operation: Mapping[str, Any]) -> Any:
    op = operation.get("op")
    if op not in ("add", "remove", "replace", "move", "copy", "test"):
        raise unprocessable(f"Unexpected kind: {op if isinstance(op, str) else 'unknown'}")
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
            raise unprocessable(
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
            raise unprocessable(
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
            raise unprocessable(
                f'add operation does not apply: doc is missing path: "{path}": missing value'
            )
        _add(holder, tokens[-1], value, path, op)
    elif op == "remove":
        if holder is _MISSING:
            raise unprocessable(
                f'remove operation does not apply: doc is missing path: "{path}": missing value'
            )
        _remove(holder, tokens[-1], path, op)
    else:
        if holder is _MISSING:
            raise unprocessable(
                f"replace operation does not apply: doc is missing path: {path}: missing value"
            )
        if isinstance(holder, dict):
            # evanphx v4 lets replace create a missing object member.
            holder[tokens[-1]] = value
        else:
            index = _array_index(tokens[-1], len(holder), allow_end=False)
            if isinstance(index, str):
                raise unprocessable(
                    f"replace operation does not apply: doc is missing key: {path}: missing value"
                )
            holder[index] = value
    return doc


def _test(doc: Any, tokens: list[str] | None, path: str, operation: Mapping[str, Any]) -> Any:
    failed = f"testing value {path} failed: test failed"
    if tokens == []:
        if not _json_equal(doc, operation.get("value")):
            raise unprocessable(failed)
        return doc
    holder = _parent(doc, tokens) if tokens else _MISSING
    if holder is _MISSING:
        raise unprocessable(
            f"test operation does not apply: is missing path: {path}: missing value"
        )
    found = _get(holder, tokens[-1])
    if found is _MISSING or found is None:
        if operation.get("value") is None:
            return doc
        raise unprocessable(failed)
    if not _json_equal(found, operation.get("value")):
        raise unprocessable(failed)
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
