"""Kubernetes ``Status`` error objects and the ``ApiError`` exception that carries them.

Everything below the HTTP layer raises ``ApiError``; server.py turns it into a response.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


class ApiError(Exception):
    """An error the API server answers with a ``Status`` object."""

    def __init__(
        self,
        code: int,
        message: str,
        *,
        reason: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or _REASONS.get(code, "Unknown")
        self.details = details

    def body(self) -> dict[str, Any]:
        """Return the Status object for this error."""
        return status_body(self.code, self.message, reason=self.reason, details=self.details)


def status_body(
    code: int, message: str, *, reason: str = "", details: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Return a Failure (or Success for 2xx) Status object."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success" if code < 400 else "Failure",
        "message": message,
        "reason": reason or _REASONS.get(code, ""),
        "code": code,
    }
    if code < 400 and not message:
        body.pop("message")
        body.pop("reason")
    if details:
        body["details"] = details
    return body


def details(**fields: Any) -> dict[str, Any]:
    """Return StatusDetails without its empty fields (they are omitempty in Kubernetes)."""
    return {key: value for key, value in fields.items() if value}


def _qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, group: str, name: str) -> ApiError:
    """Return the 404 for a missing object."""
    return ApiError(
        404,
        f'{_qualified(resource, group)} "{name}" not found',
        details=details(name=name, group=group, kind=resource),
    )


def already_exists(resource: str, group: str, name: str) -> ApiError:
    """Return the 409 for create-if-exists."""
    return ApiError(
        409,
        f'{_qualified(resource, group)} "{name}" already exists',
        reason="AlreadyExists",
        details=details(name=name, group=group, kind=resource),
    )


def conflict(resource: str, group: str, name: str) -> ApiError:
    """Return the 409 for an update with a stale resourceVersion."""
    return ApiError(
        409,
        f'Operation cannot be fulfilled on {_qualified(resource, group)} "{name}": '
        "the object has been modified; please apply your changes to the latest version "
        "and try again",
        details=details(name=name, group=group, kind=resource),
    )


def invalid(kind: str, group: str, name: str, causes: Sequence[Any]) -> ApiError:
    """Return the 422 for a failed validation; ``causes`` are schema.Cause values."""
    # field.ErrorList.ToAggregate drops repeated errors from the message (not the causes).
    parts = list(
        dict.fromkeys(
            f"{cause.field}: {cause.message}" if cause.field else cause.message for cause in causes
        )
    )
    summary = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    return ApiError(
        422,
        f'{kind}{"." + group if group else ""} "{name}" is invalid: {summary}',
        details=details(
            name=name,
            group=group,
            kind=kind,
            causes=[
                {"reason": cause.reason, "message": cause.message, "field": cause.field}
                for cause in causes
            ],
        ),
    )


def bad_request(message: str) -> ApiError:
    """Return a 400 BadRequest."""
    return ApiError(400, message)
