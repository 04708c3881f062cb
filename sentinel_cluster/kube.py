"""A thin JSON client for the Kubernetes API, built on the official client's transport.

The operator and the web app talk to the API server only through ``KubeClient``. It reuses
the official ``kubernetes`` package for configuration (kubeconfig or in-cluster), TLS and
authentication, but sends and returns plain JSON dicts: the product deals with one custom
resource and a few fields of Deployments, so typed models would add conversion, not safety.

Every failure leaves as a ``KubeError`` subclass with the cause chained, so callers decide
between "retry with backoff" (``Unavailable``) and "report and stop" (the others) without
ever seeing a urllib3 or client exception.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import urllib3
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

GROUP = "sentinel.example.com"
VERSION = "v1alpha1"
PLURAL = "rolloutanalyses"

MERGE_PATCH = "application/merge-patch+json"


class KubeError(Exception):
    """The API server refused a request, or could not be reached."""

    def __init__(self, message: str, *, status: int = 0, reason: str = "", body: Any = None):
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.body = body


class NotFound(KubeError):
    pass


class Conflict(KubeError):
    """409: a stale resourceVersion or an object that already exists."""


class Forbidden(KubeError):
    """401/403: the credentials are wrong or lack a permission (RBAC)."""


class Invalid(KubeError):
    """400/422: the object was refused; ``causes`` lists the field errors."""

    @property
    def causes(self) -> list[dict[str, str]]:
        details = (self.body or {}).get("details") or {}
        return list(details.get("causes") or [])


class Gone(KubeError):
    """410: a watch asked for a resourceVersion the server no longer has."""


class Unavailable(KubeError):
    """The server could not answer: connection error, timeout, 429 or 5xx. Retry later."""


_BY_STATUS: dict[int, type[KubeError]] = {
    400: Invalid,
    401: Forbidden,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    422: Invalid,
    429: Unavailable,
}


@dataclass(frozen=True)
class WatchEvent:
    type: str  # ADDED | MODIFIED | DELETED | BOOKMARK
    object: dict[str, Any] = field(default_factory=dict)


def load_api_client(kubeconfig: str | None = None) -> k8s.ApiClient:
    """Return an ApiClient for ``kubeconfig``, the default kubeconfig, or the in-cluster config."""
    configuration = k8s.Configuration()
    try:
        if kubeconfig:
            k8s_config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
        else:
            k8s_config.load_config(client_configuration=configuration)
    except (k8s_config.ConfigException, OSError, TypeError, ValueError) as exc:
        raise KubeError(f"cannot load Kubernetes configuration: {exc}") from exc
    # Connection errors surface at once; the operator's own backoff decides when to retry.
    configuration.retries = False
    return k8s.ApiClient(configuration)


class KubeClient:
    """JSON requests against one API server."""

    def __init__(self, api_client: k8s.ApiClient, *, timeout: float = 10.0) -> None:
        self.api_client = api_client
        self.timeout = timeout

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """Send one request and return the decoded JSON answer; raise a ``KubeError``."""
        response = self._send(method, path, query, body, content_type, timeout, stream=False)
        try:
            return json.loads(response.data or b"{}")
        except ValueError as exc:
            raise Unavailable(f"{method} {path}: the API server sent invalid JSON") from exc

    def list_all(self, path: str, *, page: int = 500) -> tuple[list[dict[str, Any]], str]:
        """Return every item of a collection (following ``continue``) and the list's version."""
        items: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            answer = self.request("GET", path, query={"limit": page, "continue": token})
            items.extend(answer.get("items") or [])
            meta = answer.get("metadata") or {}
            token = meta.get("continue") or None
            if not token:
                return items, str(meta.get("resourceVersion") or "")

    def watch(
        self, path: str, *, resource_version: str, timeout_seconds: int = 300
    ) -> Iterator[WatchEvent]:
        """Yield events after ``resource_version``; raise ``Gone`` when it is too old."""
        query = {
            "watch": "true",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(timeout_seconds),
        }
        response = self._send("GET", path, query, None, "", timeout_seconds + 10, stream=True)
        raw = response.response
        buffer = b""
        try:
            for chunk in raw.stream(4096, decode_content=True):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        yield self._event(line, path)
            if buffer.strip():
                yield self._event(buffer, path)
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise Unavailable(f"watch {path} broke off: {exc}") from exc
        finally:
            raw.release_conn()

    def _event(self, line: bytes, path: str) -> WatchEvent:
        try:
            data = json.loads(line)
        except ValueError as exc:
            raise Unavailable(f"watch {path}: the API server sent invalid JSON") from exc
        if data.get("type") == "ERROR":
            status = data.get("object") or {}
            raise _error(int(status.get("code") or 500), status, f"watch {path}")
        return WatchEvent(type=str(data.get("type")), object=data.get("object") or {})

    def _send(
        self,
        method: str,
        path: str,
        query: Mapping[str, Any] | None,
        body: Any,
        content_type: str,
        timeout: float | None,
        *,
        stream: bool,
    ) -> Any:
        headers = {"Accept": "application/json"}
        if content_type and body is not None:
            headers["Content-Type"] = content_type
        params = [(key, value) for key, value in (query or {}).items() if value is not None]
        try:
            prepared = self.api_client.param_serialize(
                method=method,
                resource_path=path,
                query_params=params,
                header_params=headers,
                body=body,
                auth_settings=["BearerToken"],
            )
            response = self.api_client.call_api(*prepared, _request_timeout=timeout or self.timeout)
            if not stream or response.status >= 300:
                response.read()
        except ApiException as exc:
            raise Unavailable(f"{method} {path}: {exc.reason or exc}", status=0) from exc
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise Unavailable(f"{method} {path}: cannot reach the API server ({exc})") from exc
        if response.status >= 300:
            try:
                status = json.loads(response.data or b"{}")
            except ValueError:
                status = {}
            raise _error(response.status, status, f"{method} {path}")
        return response


def _error(code: int, status: Mapping[str, Any], what: str) -> KubeError:
    message = status.get("message") or f"HTTP {code}"
    cls = _BY_STATUS.get(code, Unavailable if code >= 500 else KubeError)
    return cls(f"{what}: {message}", status=code, reason=status.get("reason", ""), body=status)


def analyses_path(namespace: str | None = None) -> str:
    """Return the collection path of RolloutAnalyses, in one namespace or all."""
    if namespace:
        return f"/apis/{GROUP}/{VERSION}/namespaces/{quote(namespace)}/{PLURAL}"
    return f"/apis/{GROUP}/{VERSION}/{PLURAL}"


def analysis_path(namespace: str, name: str) -> str:
    return f"{analyses_path(namespace)}/{quote(name)}"


def deployment_path(namespace: str, name: str) -> str:
    return f"/apis/apps/v1/namespaces/{quote(namespace)}/deployments/{quote(name)}"


def events_path(namespace: str) -> str:
    return f"/api/v1/namespaces/{quote(namespace)}/events"


def lease_path(namespace: str, name: str | None = None) -> str:
    base = f"/apis/coordination.k8s.io/v1/namespaces/{quote(namespace)}/leases"
    return f"{base}/{quote(name)}" if name else base
