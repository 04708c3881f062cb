"""Leader election on a ``coordination.k8s.io/v1`` Lease, the way client-go does it.

Several operator replicas may run; only the one holding the Lease dispatches evaluations.
The holder renews the Lease every ``retry_period``; the others take it over once they have
seen the same record unchanged for ``lease_duration`` (measured on their own clock, so clock
skew between replicas does not matter). ``LeaderElector.tick`` is one step of that loop and
is driven by the operator's runtime; it never raises for API trouble, it just reports whether
this replica leads now.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sentinel_cluster import kube

log = logging.getLogger(__name__)


def _micro_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class _Observed:
    record: tuple[Any, ...]
    at: float  # monotonic seconds when this record was first seen


class LeaderElector:
    """Acquire and renew one Lease; ``is_leader`` says whether this replica holds it."""

    def __init__(
        self,
        client: kube.KubeClient,
        *,
        namespace: str,
        name: str,
        identity: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        monotonic: Callable[[], float],
        now: Callable[[], datetime],
    ) -> None:
        self.client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self._monotonic = monotonic
        self._now = now
        self._observed: _Observed | None = None
        self._last_renewal: float | None = None
        self.is_leader = False

    def tick(self) -> bool:
        """Try to acquire or renew the Lease once; return whether this replica now leads."""
        try:
            self._try_acquire_or_renew()
        except kube.Forbidden as exc:
            # Only a person can fix RBAC; say so plainly, and keep trying meanwhile.
            log.error("leader election: the Lease is not accessible (check RBAC): %s", exc)
            if self.is_leader and self._renewal_overdue():
                self._lose("could not renew the lease in time")
        except kube.KubeError as exc:
            log.warning("leader election: %s", exc)
            if self.is_leader and self._renewal_overdue():
                self._lose("could not renew the lease in time")
        return self.is_leader

    def release(self) -> None:
        """Give the Lease up on shutdown so another replica takes over at once."""
        if not self.is_leader:
            return
        try:
            lease = self.client.request("GET", kube.lease_path(self.namespace, self.name))
            if lease.get("spec", {}).get("holderIdentity") == self.identity:
                lease["spec"]["holderIdentity"] = None
                lease["spec"]["leaseDurationSeconds"] = 1
                self.client.request("PUT", kube.lease_path(self.namespace, self.name), body=lease)
        except kube.KubeError as exc:
            log.warning("leader election: could not release the lease: %s", exc)
        self.is_leader = False

    def _try_acquire_or_renew(self) -> None:
        now = self._now()
        try:
            lease = self.client.request("GET", kube.lease_path(self.namespace, self.name))
        except kube.NotFound:
            self._create(now)
            return
        spec = lease.setdefault("spec", {})
        holder = spec.get("holderIdentity")
        record = (holder, spec.get("renewTime"), spec.get("leaseTransitions"))
        mono = self._monotonic()
        if self._observed is None or self._observed.record != record:
            self._observed = _Observed(record, mono)
        expired = mono - self._observed.at >= float(
            spec.get("leaseDurationSeconds") or self.lease_duration
        )
        if holder and holder != self.identity and not expired:
            if self.is_leader:
                self._lose(f"the lease is held by {holder}")
            return
        if holder != self.identity:
            spec["acquireTime"] = _micro_time(now)
            spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        spec["holderIdentity"] = self.identity
        spec["leaseDurationSeconds"] = int(self.lease_duration)
        spec["renewTime"] = _micro_time(now)
        try:
            self.client.request("PUT", kube.lease_path(self.namespace, self.name), body=lease)
        except kube.Conflict:
            return  # another replica wrote first; look again next tick
        self._won()

    def _create(self, now: datetime) -> None:
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": int(self.lease_duration),
                "acquireTime": _micro_time(now),
                "renewTime": _micro_time(now),
                "leaseTransitions": 0,
            },
        }
        try:
            self.client.request("POST", kube.lease_path(self.namespace), body=body)
        except kube.Conflict:
            return
        self._won()

    def _won(self) -> None:
        if not self.is_leader:
            log.info(
                "leader election: %s now leads (lease %s/%s)",
                self.identity,
                self.namespace,
                self.name,
            )
        self.is_leader = True
        self._last_renewal = self._monotonic()

    def _renewal_overdue(self) -> bool:
        return (
            self._last_renewal is None
            or self._monotonic() - self._last_renewal > self.renew_deadline
        )

    def _lose(self, why: str) -> None:
        log.warning("leader election: %s lost the lease: %s", self.identity, why)
        self.is_leader = False
