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
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import quote, urlencode

import urllib3
import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from sentinel_core.kinds import PLURALS

GROUP = "sentinel.example.com"
VERSION = "v1alpha1"
PLURAL = "rolloutanalyses"

MERGE_PATCH = "application/merge-patch+json"
# The longest watch event line accepted: the API server stores objects of at most ~1.5 MiB
# (etcd's request limit); far past that is a broken or hostile stream, not a big object.
MAX_WATCH_LINE = 16 * 1024 * 1024


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


# How apimachinery prints the path of an error that belongs to no field.
_NO_FIELD = "<nil>"


class Invalid(KubeError):
    """400/422: the object was refused; ``causes`` lists the field errors."""

    @property
    def causes(self) -> list[dict[str, str]]:
        body = self.body if isinstance(self.body, Mapping) else {}
        details = body.get("details")
        causes = details.get("causes") if isinstance(details, Mapping) else None
        # A CRD with CEL rules makes kube-apiserver add, after a schema error, a cause with the
        # field "<nil>" saying the rules were not checked: a note, not a field error.
        return [
            cause
            for cause in causes or []
            if isinstance(cause, dict) and cause.get("field") != _NO_FIELD
        ]


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
    if kubeconfig and _cannot_expire(kubeconfig):
        # The loader's hook re-applies the whole configuration before every request (host,
        # certificates, the proxy environment: 2.3 % of the operator's CPU, docs/performance.md
        # "Cuts 5 and 6") so that an expired exec or auth-provider credential is renewed. A
        # static token, password or client certificate never expires: nothing to refresh. The
        # in-cluster loader (no kubeconfig) keeps its hook: it re-reads the rotated
        # ServiceAccount token.
        configuration.refresh_api_key_hook = None
    return k8s.ApiClient(configuration)


def _cannot_expire(kubeconfig: str) -> bool:
    """Return whether the current context's user of ``kubeconfig`` has only static credentials.

    The loader keeps what it read private, so the file is read again here, as the loader reads
    it: the ``current-context``'s user, by name. Anything else (several files joined with
    ``os.pathsep``, which the loader merges; an ``exec`` plugin; an ``auth-provider``; a file
    that does not read) keeps the refresh.
    """
    if os.pathsep in kubeconfig:
        return False
    try:
        with open(os.path.expanduser(kubeconfig), encoding="utf-8") as file:
            config = yaml.safe_load(file)
        contexts = {c["name"]: c["context"] for c in config.get("contexts") or ()}
        name = contexts[config["current-context"]].get("user")
        users = {u["name"]: u.get("user") or {} for u in config.get("users") or ()}
        user = users.get(name) or {}
    except (OSError, yaml.YAMLError, AttributeError, KeyError, TypeError):
        return False
    return isinstance(user, dict) and "exec" not in user and "auth-provider" not in user


class OwnedReader(Protocol):
    """What the readers of ReplicaSets and ControllerRevisions ask: ``KubeClient.list_owned``,
    or an answer from the operator's caches (``sentinel_operator.reconcile``)."""

    def list_owned(self, path: str, owner: Mapping[str, Any]) -> list[Mapping[str, Any]]: ...


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
            answer = json.loads(response.data or b"{}")
        except (ValueError, RecursionError) as exc:
            raise Unavailable(f"{method} {path}: the API server sent invalid JSON") from exc
        if not isinstance(answer, dict):
            raise Unavailable(f"{method} {path}: the API server sent no JSON object")
        return answer

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

    def list_owned(self, path: str, owner: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        """Return the items of the collection ``path`` that ``owner`` (a workload) owns.

        One list by the owner's ``matchLabels``, kept to the items whose ``ownerReferences``
        name its uid (so the list is exact whatever else the labels select). A cluster that
        serves no such collection (devcluster, which plays no controllers) answers 404: that is
        none, not an error; any other API error is raised.
        """
        metadata = owner.get("metadata") or {}
        uid = metadata.get("uid")
        labels = ((owner.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        selector = ",".join(f"{key}={value}" for key, value in sorted(labels.items()))
        query = {"labelSelector": selector} if selector else None
        try:
            answer = self.request("GET", path, query=query)
        except NotFound:
            return []
        return [
            item
            for item in answer.get("items") or ()
            if isinstance(item, Mapping)
            and any(
                isinstance(ref, Mapping) and ref.get("uid") == uid
                for ref in (item.get("metadata") or {}).get("ownerReferences") or ()
            )
        ]

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
        raw = self._send("GET", path, query, None, "", timeout_seconds + 10, stream=True)
        decoder = WatchDecoder(path)
        try:
            for chunk in raw.stream(4096, decode_content=True):
                yield from decoder.feed(chunk)
            yield from decoder.finish()
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise Unavailable(f"watch {path} broke off: {exc}") from exc
        finally:
            raw.release_conn()

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
    ) -> urllib3.BaseHTTPResponse:
        # Straight to the official client's pooled urllib3 connections: its ``param_serialize``
        # and ``call_api`` deep-copy every body and wrap every answer, a cost paid on every
        # request (docs/performance.md, "A lean JSON path"). TLS, client certificates and
        # proxies stay the pool manager's, as the official client set it up.
        configuration = self.api_client.configuration
        headers = {**self.api_client.default_headers, "Accept": "application/json"}
        if self.api_client.cookie:
            headers["Cookie"] = self.api_client.cookie
        # Read from the configuration on every request, through its refresh hook: a rotated
        # in-cluster token or an expired exec credential is renewed as the official client does.
        for setting in configuration.auth_settings().values():
            if setting["in"] == "header" and setting["value"]:
                headers[setting["key"]] = setting["value"]
        encoded = None
        if body is not None:
            encoded = json.dumps(body).encode()
            if content_type:
                headers["Content-Type"] = content_type
        params = [(key, value) for key, value in (query or {}).items() if value is not None]
        url = configuration.host + path + (f"?{urlencode(params)}" if params else "")
        try:
            response = self.api_client.rest_client.pool_manager.request(
                method,
                url,
                body=encoded,
                headers=headers,
                timeout=urllib3.Timeout(total=timeout or self.timeout),
                preload_content=not stream,
            )
            if stream and response.status >= 300:
                response.read()
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise Unavailable(f"{method} {path}: cannot reach the API server ({exc})") from exc
        if response.status >= 300:
            try:
                status = json.loads(response.data or b"{}")
            except (ValueError, RecursionError):
                status = {}
            raise _error(
                response.status, status if isinstance(status, dict) else {}, f"{method} {path}"
            )
        return response


def _error(code: int, status: Mapping[str, Any], what: str) -> KubeError:
    # Only strings are shown: any other JSON value could be huge or nested too deeply to print.
    message = _text(status.get("message")) or f"HTTP {code}"
    cls = _BY_STATUS.get(code, Unavailable if code >= 500 else KubeError)
    return cls(f"{what}: {message}", status=code, reason=_text(status.get("reason")), body=status)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


class WatchDecoder:
    """Split a watch stream into ``WatchEvent``s: the bytes in, events or a ``KubeError`` out.

    ``KubeClient.watch`` feeds it the stream's chunks as they arrive; it does no I/O, so any
    stream can be tested without a server. Events are JSON objects, one per line. Whatever the
    bytes, it yields events or raises a ``KubeError``: ``Unavailable`` for anything that is not
    an event (invalid or deeply nested JSON, a line longer than ``max_line``), the error the
    server meant for an ``ERROR`` event (``Gone`` for 410).
    """

    def __init__(self, path: str, *, max_line: int = MAX_WATCH_LINE) -> None:
        self.path = path
        self.max_line = max_line
        self._buffer = bytearray()

    def feed(self, chunk: bytes) -> list[WatchEvent]:
        """Return the events completed by ``chunk``."""
        self._buffer += chunk
        events: list[WatchEvent] = []
        while (end := self._buffer.find(b"\n")) >= 0:
            line = bytes(self._buffer[:end])
            del self._buffer[: end + 1]
            if line.strip():
                events.append(decode_event(line, self.path, max_line=self.max_line))
        if len(self._buffer) > self.max_line:
            # Unbounded growth is the risk, not the line itself: stop before holding more.
            raise Unavailable(f"watch {self.path}: an event is longer than {self.max_line} bytes")
        return events

    def finish(self) -> list[WatchEvent]:
        """Return the last event when the stream ended without a newline after it."""
        line, self._buffer = bytes(self._buffer), bytearray()
        return [decode_event(line, self.path, max_line=self.max_line)] if line.strip() else []


def decode_event(line: bytes, path: str, *, max_line: int = MAX_WATCH_LINE) -> WatchEvent:
    """Return the event of one watch line; raise a ``KubeError`` (see ``WatchDecoder``)."""
    if len(line) > max_line:
        raise Unavailable(f"watch {path}: an event is longer than {max_line} bytes")
    try:
        data = json.loads(line)
    except (ValueError, RecursionError) as exc:
        # RecursionError: JSON nested thousands deep is no event either.
        raise Unavailable(f"watch {path}: the API server sent invalid JSON") from exc
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise Unavailable(f"watch {path}: the API server sent something that is not an event")
    obj = data.get("object")
    if data["type"] == "ERROR":
        status = obj if isinstance(obj, dict) else {}
        code = status.get("code")
        valid = isinstance(code, int) and not isinstance(code, bool) and 100 <= code <= 599
        raise _error(code if valid else 500, status, f"watch {path}")
    if obj is not None and not isinstance(obj, dict):
        raise Unavailable(f"watch {path}: an event's object is not a JSON object")
    return WatchEvent(type=data["type"], object=obj or {})


def analyses_path(namespace: str | None = None) -> str:
    """Return the collection path of RolloutAnalyses, in one namespace or all."""
    if namespace:
        return f"/apis/{GROUP}/{VERSION}/namespaces/{quote(namespace)}/{PLURAL}"
    return f"/apis/{GROUP}/{VERSION}/{PLURAL}"


def analysis_path(namespace: str, name: str) -> str:
    return f"{analyses_path(namespace)}/{quote(name)}"


def deployment_path(namespace: str, name: str) -> str:
    return f"/apis/apps/v1/namespaces/{quote(namespace)}/deployments/{quote(name)}"


def replicasets_path(namespace: str) -> str:
    return apps_path("replicasets", namespace)


def apps_path(plural: str, namespace: str) -> str:
    """Return the collection path of the apps/v1 resource ``plural`` in ``namespace``."""
    return f"/apis/apps/v1/namespaces/{quote(namespace)}/{plural}"


def workload_path(kind: str, namespace: str, name: str) -> str:
    """Return the path of a target of ``kind`` (Deployment, StatefulSet or DaemonSet)."""
    return f"{workloads_path(kind, namespace)}/{quote(name)}"


def workloads_path(kind: str, namespace: str) -> str:
    """Return the collection path of the targets of ``kind`` in ``namespace``."""
    return f"/apis/apps/v1/namespaces/{quote(namespace)}/{PLURALS[kind]}"


def controllerrevisions_path(namespace: str, name: str | None = None) -> str:
    base = apps_path("controllerrevisions", namespace)
    return f"{base}/{quote(name)}" if name else base


def events_path(namespace: str) -> str:
    return f"/api/v1/namespaces/{quote(namespace)}/events"


def lease_path(namespace: str, name: str | None = None) -> str:
    base = f"/apis/coordination.k8s.io/v1/namespaces/{quote(namespace)}/leases"
    return f"{base}/{quote(name)}" if name else base
