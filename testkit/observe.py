"""Read what the operator did: conditions, events, history rows, queries, the pause.

The operator suites, ``tests/deploy`` and anyone checking an operator end to end assert on
these, through the admin ``KubeClient``, an ``OperatorProcess``'s database and a
``FaultProxy``'s request log; the ``wait_*`` helpers poll until the expected state arrives.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from sentinel_cluster import kube
from testkit.fault_proxy import FaultProxy
from testkit.operator import OperatorProcess
from testkit.waiting import wait_until


def condition(resource: Mapping[str, Any], type_: str) -> dict[str, Any]:
    """Return the status condition of ``type_`` (empty dict when absent)."""
    for item in (resource.get("status") or {}).get("conditions") or []:
        if item.get("type") == type_:
            return dict(item)
    return {}


def get_analysis(client: kube.KubeClient, namespace: str, name: str) -> dict[str, Any]:
    """Return the RolloutAnalysis ``namespace/name`` as the API server has it."""
    return client.request("GET", kube.analysis_path(namespace, name))


def events_for(client: kube.KubeClient, namespace: str, name: str) -> list[dict[str, Any]]:
    """Return the core/v1 Events recorded on the RolloutAnalysis ``namespace/name``."""
    items = client.request("GET", kube.events_path(namespace)).get("items") or []
    return [
        item
        for item in items
        if (item.get("involvedObject") or {}).get("kind") == "RolloutAnalysis"
        and (item.get("involvedObject") or {}).get("name") == name
    ]


def event_reasons(client: kube.KubeClient, namespace: str, name: str) -> list[str]:
    """Return the reasons of the Events on ``namespace/name``, each repeated by its count."""
    reasons: list[str] = []
    for event in events_for(client, namespace, name):
        reasons.extend([str(event["reason"])] * int(event.get("count") or 1))
    return reasons


def wait_condition(
    client: kube.KubeClient,
    namespace: str,
    name: str,
    type_: str,
    reason: str,
    *,
    timeout: float = 15.0,
) -> dict[str, Any]:
    """Wait until condition ``type_`` of ``namespace/name`` has ``reason``; return the resource."""

    def reached() -> dict[str, Any] | None:
        resource = get_analysis(client, namespace, name)
        return resource if condition(resource, type_).get("reason") == reason else None

    return wait_until(reached, timeout=timeout, interval=0.1, what=f"{type_}={reason} on {name}")


def queries_for(proxy: FaultProxy, case: str, since: int = 0) -> int:
    """Return how many ``/api/v1/query`` requests mentioning ``case`` the proxy saw."""
    seen = proxy.requests[since:]
    return sum(
        1
        for request in seen
        if request.path == "/api/v1/query"
        and any(case in query for query in request.params.get("query", []))
    )


def wait_rows(
    process: OperatorProcess,
    namespace: str,
    name: str,
    predicate: Callable[[list[dict[str, Any]]], bool],
    *,
    timeout: float = 15.0,
    what: str = "",
) -> list[dict[str, Any]]:
    """Poll the history of ``namespace/name`` until ``predicate(rows)`` holds; return the rows."""

    def rows() -> list[dict[str, Any]] | None:
        found = process.evaluations(namespace, name)
        return found if predicate(found) else None

    return wait_until(rows, timeout=timeout, interval=0.1, what=what or f"history of {name}")


def due_lags(rows: Sequence[Mapping[str, Any]]) -> list[float]:
    """Seconds each history row's evaluation started after its due time, from the second on.

    ``rows`` are an analysis's history from its first evaluation, oldest first; each keeps the
    due time the dispatcher handed its attempt (``due_at``, docs/status.md#history-outcomes).
    Rebuilding the due times from the first row instead, as this did before the rows kept
    them, guessed that row's due time and could not follow a claim that ran out (the due time
    it leaves is the claim's end, not the requeue's): it once made an attempt after a killed
    worker's claim look 4 s early. That no due time was attempted twice is
    ``distinct_due_times``'s.
    """
    return [(_utc(row["started_at"]) - _utc(row["due_at"])).total_seconds() for row in rows[1:]]


def due_times(rows: Sequence[Mapping[str, Any]]) -> list[datetime]:
    """Return each history row's due time, as the dispatcher handed its attempt."""
    return [_utc(row["due_at"]) for row in rows]


def distinct_due_times(rows: Sequence[Mapping[str, Any]]) -> bool:
    """Return whether no two of an analysis's history rows were attempts for one due time."""
    dues = due_times(rows)
    return len(set(dues)) == len(dues)


def _utc(value: Any) -> datetime:
    # SQLite's rows hold naive UTC times, PostgreSQL's aware ones.
    at = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def deployment_paused(client: kube.KubeClient, namespace: str, name: str = "checkout") -> bool:
    """Return whether the Deployment ``namespace/name`` has ``spec.paused`` set."""
    deployment = client.request("GET", kube.deployment_path(namespace, name))
    return deployment["spec"].get("paused") is True
