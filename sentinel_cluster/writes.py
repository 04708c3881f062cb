"""The one implementation of each write to the cluster that the operator and the web app share.

- ``write_status``: PUT the status subresource with the resource's resourceVersion; on a 409
  re-read the resource and re-apply a status computed from the fresh copy (the operator
  re-applies its decided status, keeping a resume made in between; the web app's resume
  recomputes it from the fresh one).
- ``pause``: merge-patch the target paused, ``paused-by`` kept a union (each kind is paused its
  own way: docs/status.md#pausing-each-kind).
- ``release``: take one analysis out of the target's pause; the last holder gives the target
  back what it had before the first pause. An analysis that holds nothing, or a record that
  cannot be trusted, changes nothing.
- ``clean_up``: remove a pause record a person left stale (a resume by hand) or made
  untrustworthy, leaving the spec as it is.
- ``adopt``: complete a pause record written before ``paused-before`` existed
  (``sentinel_core.pause_upgrade``).

Each re-reads on a conflict at most ``CONFLICT_RETRIES`` times and then raises ``kube.Conflict``;
callers decide what that means to them (backoff for the operator, a 409 for a person). The
patches themselves are computed by the pure ``sentinel_core.workload_kinds``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sentinel_cluster import kube
from sentinel_core.kinds import DEPLOYMENT
from sentinel_core.workload_kinds import (
    PauseTarget,
    Release,
    clean_up_patch,
    pause_patch,
    release_patch,
)

# Re-reads after a 409 before giving up: enough for a busy resource, short enough for a person.
CONFLICT_RETRIES = 5

# Status to write, given the resource as freshly read.
StatusFor = Callable[[Mapping[str, Any]], Mapping[str, Any]]


class AnalysisGone(Exception):
    """The analysis was deleted, or deleted and created again under a new uid, meanwhile."""


class StaleRead(Exception):
    """A 409 whose fresh copy shows the copy written from was stale; ``fresh`` is that copy."""

    def __init__(self, fresh: Mapping[str, Any]) -> None:
        super().__init__("the status was decided from a stale copy")
        self.fresh = fresh


def write_status(
    client: kube.KubeClient,
    resource: Mapping[str, Any],
    status_for: StatusFor,
    *,
    stale: Callable[[Mapping[str, Any]], bool] | None = None,
) -> dict[str, Any]:
    """Write ``status_for(resource)`` through ``/status``; return the API server's answer.

    The write carries ``resource``'s resourceVersion. On a 409 the resource is read again and
    ``status_for`` called with the fresh copy; raise ``AnalysisGone`` when the resource is gone
    or is another incarnation, ``kube.Conflict`` when it kept changing, and ``StaleRead`` when
    ``stale(fresh)`` says ``resource`` (from a cache) was behind: nothing is written then.
    """
    meta = resource.get("metadata") or {}
    path = kube.analysis_path(str(meta.get("namespace")), str(meta.get("name")))
    uid = meta.get("uid")
    current: Mapping[str, Any] = resource
    for _ in range(CONFLICT_RETRIES):
        body = {**current, "status": dict(status_for(current))}
        try:
            return client.request("PUT", f"{path}/status", body=body)
        except kube.NotFound as exc:
            raise AnalysisGone(path) from exc
        except kube.Conflict:
            try:
                current = client.request("GET", path)
            except kube.NotFound as exc:
                raise AnalysisGone(path) from exc
            if (current.get("metadata") or {}).get("uid") != uid:
                raise AnalysisGone(path) from None
            if stale is not None and current is not resource and stale(current):
                raise StaleRead(current) from None
            # Only the copy the attempt started from can be a cache's.
            stale = None
    raise kube.Conflict(f"status write of {path} conflicted {CONFLICT_RETRIES} times", status=409)


def pause(client: kube.KubeClient, order: PauseTarget, deployment: Mapping[str, Any]) -> None:
    """Pause the target as ``order`` says; ``deployment`` is the target as last read.

    A 409 (another analysis paused it meanwhile, or a person edited it) re-reads the Deployment
    and merges its ``paused-by`` with ours, so no analysis's entry is lost.
    """
    path = kube.workload_path(order.kind, order.namespace, order.name)
    current = deployment
    for _ in range(CONFLICT_RETRIES):
        try:
            client.request(
                "PATCH", path, body=pause_patch(order, current), content_type=kube.MERGE_PATCH
            )
        except kube.Conflict:
            current = client.request("GET", path)
            continue
        return
    raise kube.Conflict(f"pausing {path} conflicted {CONFLICT_RETRIES} times", status=409)


def release(
    client: kube.KubeClient,
    namespace: str,
    name: str,
    key: str,
    *,
    kind: str = DEPLOYMENT,
) -> Release | None:
    """Take the analysis ``key`` out of the pause of the ``kind`` ``namespace/name``.

    Return what was done (``sentinel_core.workload_kinds.release_patch`` says what may be), or
    None when the target does not exist. Raise ``kube.Conflict`` when it kept changing.
    """
    path = kube.workload_path(kind, namespace, name)
    for _ in range(CONFLICT_RETRIES):
        try:
            workload = client.request("GET", path)
        except kube.NotFound:
            return None
        change = release_patch(workload, key, kind=kind)
        if change.patch is None:
            return change
        try:
            client.request("PATCH", path, body=change.patch, content_type=kube.MERGE_PATCH)
        except kube.Conflict:
            continue
        return change
    raise kube.Conflict(f"releasing {path} conflicted {CONFLICT_RETRIES} times", status=409)


def clean_up(
    client: kube.KubeClient, kind: str, namespace: str, name: str, workload: Mapping[str, Any]
) -> bool:
    """Remove the stale or untrusted pause record of ``workload`` (the target as last read).

    Return whether it was removed. A 409 or 404 (the target changed or went meanwhile) leaves
    it to the next evaluation, which reads the target afresh.
    """
    patch = clean_up_patch(workload, kind)
    if patch is None:
        return False
    try:
        client.request(
            "PATCH",
            kube.workload_path(kind, namespace, name),
            body=patch,
            content_type=kube.MERGE_PATCH,
        )
    except (kube.Conflict, kube.NotFound):
        return False
    return True


def adopt(
    client: kube.KubeClient, kind: str, namespace: str, name: str, patch: Mapping[str, Any]
) -> dict[str, Any] | None:
    """Apply ``adoption_patch``'s ``patch``; return the target as written, None on a 409 or 404.

    The patch carries the resourceVersion read: a target changed meanwhile is left to the next
    evaluation, which reads it afresh.
    """
    try:
        return client.request(
            "PATCH",
            kube.workload_path(kind, namespace, name),
            body=dict(patch),
            content_type=kube.MERGE_PATCH,
        )
    except (kube.Conflict, kube.NotFound):
        return None
