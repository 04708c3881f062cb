"""Ask Prometheus for one instant value per metric and turn every answer into a Measurement.

The reconciler calls ``PrometheusClient.measure`` once per metric per evaluation. The client
never raises: a refused query is ``MeasurementError.INVALID_QUERY`` (permanent until the spec
changes), anything else that prevents an answer is ``MeasurementError.UNAVAILABLE`` (retried
with backoff by the caller). It makes exactly one HTTP request per call and never retries
itself, because requeueing is the reconciler's decision, not the transport's.

The Prometheus URL comes from configuration only, never from a resource, so a resource author
cannot make the operator send its bearer token elsewhere.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar
from urllib.parse import urlsplit

import requests
import urllib3

from sentinel_core.measurement import Measurement, MeasurementError

# Prometheus refuses these because of the query itself; every other errorType (timeout,
# canceled, internal, unavailable, ...) is about the server's state and worth retrying.
_QUERY_ERROR_TYPES = frozenset({"bad_data", "execution"})

# Status messages end up in conditions and events; a runaway error text must not bloat them.
_MAX_MESSAGE = 500

# The default cap on one answer (SENTINEL_PROMETHEUS_MAX_BYTES): thousands of series fit in it.
DEFAULT_MAX_BYTES = 4 * 1024 * 1024
# Bytes per read of a streamed answer.
_CHUNK = 64 * 1024


class _Overdue:
    """The answer was still arriving when the client's timeout ran out."""


_OVERDUE = _Overdue()

# Called once per HTTP request with what it produced; the operator counts requests by outcome.
RequestHook = Callable[[Measurement], None]

# What one answer parses into: a Measurement (instant query) or a range_query.RangeResult.
T = TypeVar("T")
# Parses one answer: (metric, status=, reason=, content_type=, body=) -> T.
Parser = Callable[..., T]


class PrometheusClient:
    """Run instant queries against one Prometheus server."""

    def __init__(
        self,
        base_url: str,
        *,
        token: str = "",
        timeout: float = 5.0,
        session: requests.Session | None = None,
        on_request: RequestHook | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        clock: Callable[[], float] = time.monotonic,
        provider: str = "",
        secrets: tuple[str, ...] = (),
        on_response: Callable[[str, float], None] | None = None,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"Prometheus URL {base_url!r} is not a http or https URL.")
        if timeout <= 0:
            raise ValueError(f"Prometheus timeout must be positive, got {timeout!r}.")
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        if max_bytes <= 0:
            raise ValueError(f"Prometheus answer cap must be positive, got {max_bytes!r}.")
        self.max_bytes = max_bytes
        self._clock = clock
        self._token = token
        # The session is this client's own (one per provider): what requests would read from the
        # environment on every request is read once, here.
        self._session = settle_environment(
            session if session is not None else requests.Session(), self.base_url
        )
        self._on_request = on_request
        # Prometheus's own timeout makes it abandon an evaluation we no longer wait for;
        # whole milliseconds, the duration form every Prometheus-compatible API parses.
        self._server_timeout = f"{max(1, round(timeout * 1000))}ms"
        # host:port only: a URL may carry user:password, and messages are shown to users.
        port = f":{parts.port}" if parts.port else ""
        self._where = f"{parts.hostname}{port}"
        # docs/operations.md#metric-providers: messages name the provider, and no secret of it may
        # reach a message.
        self.provider = provider
        self._secrets = tuple(s for s in (token, *secrets) if s)
        self._on_response = on_response
        self._code = "error"

    def measure(self, metric: str, query: str, *, at: datetime | None = None) -> Measurement:
        """Return the worst value of ``query``, no data, or a typed error.

        ``at`` evaluates the query at that earlier instant (Prometheus's ``time`` parameter,
        for a baseline); None means now, as Prometheus decides it.
        """
        result = self._query(metric, query, at)
        self.counted(result)
        return result

    def _query(self, metric: str, query: str, at: datetime | None) -> Measurement:
        params = {"query": query, "timeout": self._server_timeout}
        if at is not None:
            # Unix seconds: every Prometheus-compatible API parses them.
            params["time"] = f"{at.timestamp():.3f}"
        answer = self.fetch(metric, "/api/v1/query", params, parse_answer, _unavailable)
        if answer.error is None:
            return answer
        return self._measurement(metric, error=answer.error, message=answer.message)

    def fetch(
        self,
        metric: str,
        path: str,
        params: dict[str, str],
        parse: Parser[T],
        unavailable: Callable[[str, str], T],
    ) -> T:
        """Return ``parse`` of the answer to one GET of ``path``, or ``unavailable``'s error.

        The one HTTP request of every query kind (``range_query`` uses it too): the token, the
        timeout over the whole answer, the size cap and the transport error taxonomy. Each
        request is reported to the per-provider counters with its HTTP code and duration.
        """
        started = self._clock()
        self._code = "error"
        try:
            return self._get(metric, path, params, parse, unavailable)
        finally:
            if self._on_response is not None:
                self._on_response(self._code, self._clock() - started)

    def _get(
        self,
        metric: str,
        path: str,
        params: dict[str, str],
        parse: Parser[T],
        unavailable: Callable[[str, str], T],
    ) -> T:
        headers = {"Accept": "application/json"}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"

        def failed(message: str) -> T:
            return unavailable(metric, message)

        try:
            # Streamed, so that the body is read only up to ``max_bytes``:
            # one query matching every series must not exhaust the worker's memory.
            with self._session.get(
                f"{self.base_url}{path}",
                params=params,
                headers=headers,
                timeout=self.timeout,
                # A redirect is a misconfigured URL to report, not a place to send the token.
                allow_redirects=False,
                stream=True,
                # The session's CA file (a provider's tls.caFile) must win over
                # REQUESTS_CA_BUNDLE: settle_environment resolved that order once and turned
                # trust_env off; given here, it holds even were trust_env set again.
                verify=self._session.verify,
            ) as response:
                self._code = str(response.status_code)
                body = self._read_capped(response)
                if body is None:
                    return failed(self._too_large())
                if isinstance(body, _Overdue):
                    return failed(self._late())
        except requests.RequestException as exc:
            return failed(self._transport_cause(exc))
        return parse(
            metric,
            status=response.status_code,
            reason=response.reason or "",
            content_type=response.headers.get("Content-Type", ""),
            body=body,
        )

    def _read_capped(self, response: requests.Response) -> bytes | _Overdue | None:
        """Return the body, None when it exceeds ``max_bytes``, or ``_OVERDUE`` past the timeout.

        The cap counts decoded bytes, so a small gzip body that inflates past it is refused too.
        The read timeout of ``requests`` applies to each read; the deadline bounds the whole
        answer, so a server dripping bytes cannot hold a worker for long either.
        """
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            return None
        deadline = self._clock() + self.timeout
        body = bytearray()
        for chunk in response.iter_content(chunk_size=_CHUNK):
            body += chunk
            if len(body) > self.max_bytes:
                return None
            if self._clock() > deadline:
                return _OVERDUE
        return bytes(body)

    def _too_large(self) -> str:
        return (
            f"Prometheus answered more than {_size(self.max_bytes)}, the most the operator "
            "reads (SENTINEL_PROMETHEUS_MAX_BYTES); the answer was too large: narrow the query "
            "or aggregate it, e.g. with max() or topk()"
        )

    def _late(self) -> str:
        return f"Prometheus at {self._where} did not answer within {self.timeout:g} s"

    def _transport_cause(self, exc: requests.RequestException) -> str:
        chain = _chain(exc)
        if isinstance(exc, requests.Timeout) or any(_is_timeout(link) for link in chain):
            return f"Prometheus at {self._where} did not answer within {self.timeout:g} s"
        # requests' own exceptions are OSErrors too; the cause is the socket's error below them.
        os_errors = [
            link
            for link in chain
            if isinstance(link, OSError) and not isinstance(link, requests.RequestException)
        ]
        if isinstance(exc, requests.ConnectionError) and os_errors:
            cause = os_errors[0].strerror or str(os_errors[0]) or type(os_errors[0]).__name__
            return f"cannot reach Prometheus at {self._where}: {cause.lower()}"
        if isinstance(exc, requests.ConnectionError | requests.exceptions.ChunkedEncodingError):
            return f"the connection to Prometheus at {self._where} broke before a full answer"
        return f"request to Prometheus at {self._where} failed: {type(exc).__name__}"

    def _measurement(self, metric: str, *, error: MeasurementError, message: str) -> Measurement:
        return Measurement(metric=metric, error=error, message=self.clean(message))

    def counted(self, measurement: Measurement) -> None:
        """Report one request's result to the request hook (the operator's counters)."""
        if self._on_request is not None:
            self._on_request(measurement)

    def clean(self, message: str) -> str:
        """Return ``message`` on one line, naming the provider, every secret masked, at most
        500 characters."""
        if self.provider:
            message = f"provider {self.provider!r}: {message}"
        line = " ".join(message.split())
        for secret in self._secrets:
            line = line.replace(secret, "***")
        return line if len(line) <= _MAX_MESSAGE else line[: _MAX_MESSAGE - 1] + "…"


def settle_environment(session: requests.Session, url: str) -> requests.Session:
    """Resolve once what requests reads from the environment on every request to ``url``.

    With ``trust_env`` set, every request runs ``Session.merge_environment_settings`` (the
    proxies for the URL and the CA bundle) and ``prepare_request``'s netrc lookup, about 7 % of
    the operator's CPU (docs/performance.md, "Cuts 5 and 6"). The client's URL is fixed, and
    only its host and port decide any of it, so resolving for ``url`` once is exact; the
    session then stops reading the environment. Return ``session``.
    """
    if not session.trust_env:
        return session
    # As merge_environment_settings: the environment's proxies unless NO_PROXY (or no_proxy)
    # names the host; they take precedence over the session's own.
    session.proxies = {**session.proxies, **requests.utils.get_environ_proxies(url)}
    # A CA file of the session's own (tls.caFile) wins; REQUESTS_CA_BUNDLE, then
    # CURL_CA_BUNDLE, only replace the default verification.
    if session.verify is True or session.verify is None:
        session.verify = (
            os.environ.get("REQUESTS_CA_BUNDLE")
            or os.environ.get("CURL_CA_BUNDLE")
            or session.verify
        )
    # As prepare_request: netrc credentials only when the session has none (basicAuth). The
    # netrc file is read now, not per request: docs/operations.md#metric-providers.
    if not session.auth:
        netrc = requests.utils.get_netrc_auth(url)
        if netrc:
            session.auth = netrc
    session.trust_env = False
    return session


def parse_answer(
    metric: str, *, status: int, reason: str, content_type: str, body: bytes
) -> Measurement:
    """Return the Measurement of one Prometheus answer (a pure function of what arrived).

    Never raise, whatever the bytes: a body that is not a Prometheus API answer is
    ``UNAVAILABLE`` (also JSON nested too deeply to decode), a refused query ``INVALID_QUERY``.
    Messages are raw here; the client cleans them (token, length) before they leave it.
    """
    where = f"HTTP {status} {reason}".strip()
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError) as exc:
        # RecursionError: a body nested thousands deep; it is no answer either.
        if status != 200:
            return _unavailable(metric, f"Prometheus answered {where}")
        if _looks_like_html(body, content_type):
            return _unavailable(metric, "Prometheus answered with an HTML page instead of JSON")
        detail = str(exc) if isinstance(exc, ValueError) else "nested too deeply"
        return _unavailable(metric, f"Prometheus answered with invalid JSON ({detail})")
    if not isinstance(payload, dict) or "status" not in payload:
        return _unavailable(metric, f"Prometheus answered {where} without an API body")
    if payload["status"] == "error":
        # Only strings are shown: an arbitrary JSON value could be huge or deeply nested.
        error_type = _text(payload.get("errorType")) or "unknown"
        error = _text(payload.get("error")) or "no error text"
        if error_type in _QUERY_ERROR_TYPES:
            return _invalid(metric, error)
        return _unavailable(metric, f"Prometheus error {error_type}: {error}")
    if status != 200 or payload["status"] != "success":
        return _unavailable(metric, f"Prometheus answered {where}")
    return _from_data(metric, payload.get("data"))


def _from_data(metric: str, data: Any) -> Measurement:
    if not isinstance(data, dict):
        return _unavailable(metric, "Prometheus answered without a data object")
    result_type, result = data.get("resultType"), data.get("result")
    labels: list[tuple[tuple[str, str], ...]] = []
    if result_type == "scalar":
        samples = [result]
    elif result_type == "vector" and isinstance(result, list):
        if any(isinstance(item, dict) and "histogram" in item for item in result):
            return _invalid(
                metric,
                "the query returned native histograms, not numbers; wrap it in "
                "histogram_quantile() or a similar function",
            )
        samples = [item.get("value") if isinstance(item, dict) else None for item in result]
        labels = [_labels(item.get("metric")) if isinstance(item, dict) else () for item in result]
    elif result_type in ("matrix", "string"):
        kind = "a range vector (matrix)" if result_type == "matrix" else "a string"
        return _invalid(
            metric,
            f"the query returned {kind}; an instant query must return a scalar or a vector",
        )
    else:
        shown = result_type if isinstance(result_type, str) else type(result_type).__name__
        return _unavailable(metric, f"Prometheus answered an unknown result {shown[:80]!r}")
    texts = [_sample_text(sample) for sample in samples]
    if any(text is None for text in texts):
        return _unavailable(metric, "Prometheus answered a malformed sample")
    return _worst(metric, [text for text in texts if text is not None], labels)


def _unavailable(metric: str, message: str) -> Measurement:
    return Measurement(metric=metric, error=MeasurementError.UNAVAILABLE, message=message)


def _invalid(metric: str, message: str) -> Measurement:
    return Measurement(metric=metric, error=MeasurementError.INVALID_QUERY, message=message)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _size(count: int) -> str:
    if count % (1024 * 1024) == 0:
        return f"{count // (1024 * 1024)} MiB"
    if count % 1024 == 0:
        return f"{count // 1024} KiB"
    return f"{count} bytes"


def _sample_text(sample: Any) -> str | None:
    """Return the value string of a ``[timestamp, "value"]`` pair, or None if malformed."""
    if isinstance(sample, list) and len(sample) == 2 and isinstance(sample[1], str):
        try:
            float(sample[1])
        except ValueError:
            return None
        return sample[1]
    return None


def _worst(metric: str, texts: list[str], labels: list[tuple[tuple[str, str], ...]]) -> Measurement:
    """Pick the largest non-NaN sample and its labels; NaN and an empty vector are no data."""
    numbers = [(float(text), text, index) for index, text in enumerate(texts)]
    usable = [triple for triple in numbers if not math.isnan(triple[0])]
    series = len(texts)
    if not usable:
        message = "the query returned no series" if series == 0 else _nan_message(series)
        return Measurement(metric=metric, series=series, message=message)
    value, text, index = max(usable, key=lambda triple: triple[0])
    message = f"worst of {series} series" if series > 1 else ""
    return Measurement(
        metric=metric,
        value=value,
        text=text,
        series=series,
        message=message,
        labels=labels[index] if index < len(labels) else (),
    )


def _labels(raw: Any) -> tuple[tuple[str, str], ...]:
    """Return a series' labels; the core trims them (count and length) for the status."""
    if not isinstance(raw, dict):
        return ()
    return tuple(
        sorted((k, v) for k, v in raw.items() if isinstance(k, str) and isinstance(v, str))
    )


def _nan_message(series: int) -> str:
    return "the query returned NaN" if series == 1 else f"all {series} series are NaN"


def _looks_like_html(body: bytes, content_type: str) -> bool:
    return "html" in content_type.lower() or body.lstrip()[:1] == b"<"


def _chain(exc: BaseException) -> list[BaseException]:
    """Return ``exc`` and every exception it wraps (args, cause, context, urllib3's reason)."""
    found: list[BaseException] = []
    pending: list[BaseException] = [exc]
    while pending:
        current = pending.pop(0)
        if any(current is seen for seen in found):
            continue
        found.append(current)
        linked = [*current.args, current.__cause__, current.__context__]
        linked.append(getattr(current, "reason", None))
        pending.extend(item for item in linked if isinstance(item, BaseException))
    return found


def _is_timeout(exc: BaseException) -> bool:
    # A timeout while reading the body reaches us as a ConnectionError wrapping urllib3's
    # ReadTimeoutError, not as requests.Timeout.
    # urllib3's NewConnectionError (e.g. connection refused) subclasses its TimeoutError.
    if isinstance(exc, urllib3.exceptions.NewConnectionError):
        return False
    return isinstance(exc, TimeoutError | urllib3.exceptions.TimeoutError)
