"""Leader election on a real Lease in both clusters, with clocks the test controls.

The injected 503 and 409 (devcluster's fault hooks) run on devcluster only.

Each elector gets its own clock, as each replica has its own: takeover is measured on the
follower's clock from the moment it first saw the holder's record unchanged.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from sentinel_cluster import kube
from sentinel_operator.leader import LeaderElector
from testkit.devcluster import DevCluster


class Clock:
    """A monotonic and a wall clock that move only when told."""

    def __init__(self) -> None:
        self.seconds = 1000.0
        self.start = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)

    def monotonic(self) -> float:
        return self.seconds

    def now(self) -> datetime:
        return self.start + timedelta(seconds=self.seconds - 1000.0)

    def advance(self, seconds: float) -> None:
        self.seconds += seconds


def _elector(client: kube.KubeClient, namespace: str, identity: str, clock: Clock) -> LeaderElector:
    return LeaderElector(
        client,
        namespace=namespace,
        name="sentinel-leader",
        identity=identity,
        lease_duration=15.0,
        renew_deadline=10.0,
        monotonic=clock.monotonic,
        now=clock.now,
    )


@pytest.fixture
def clocks() -> tuple[Clock, Clock]:
    return Clock(), Clock()


@pytest.fixture
def pair(
    kube_client: kube.KubeClient, namespace: str, clocks: tuple[Clock, Clock]
) -> tuple[LeaderElector, LeaderElector]:
    return (
        _elector(kube_client, namespace, "replica-a", clocks[0]),
        _elector(kube_client, namespace, "replica-b", clocks[1]),
    )


def _lease(client: kube.KubeClient, namespace: str) -> dict[str, object]:
    return client.request("GET", kube.lease_path(namespace, "sentinel-leader"))["spec"]


def test_first_replica_acquires_and_the_other_follows(
    pair: tuple[LeaderElector, LeaderElector], kube_client: kube.KubeClient, namespace: str
) -> None:
    a, b = pair
    assert a.tick() is True
    assert b.tick() is False
    spec = _lease(kube_client, namespace)
    assert spec["holderIdentity"] == "replica-a"
    assert spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == 0


def test_follower_takes_over_only_after_the_lease_duration_without_renewal(
    pair: tuple[LeaderElector, LeaderElector],
    clocks: tuple[Clock, Clock],
    kube_client: kube.KubeClient,
    namespace: str,
) -> None:
    a, b = pair
    assert a.tick()
    assert not b.tick()  # b starts its own count now
    clocks[1].advance(14.0)
    assert not b.tick()
    clocks[1].advance(1.5)
    assert b.tick() is True
    spec = _lease(kube_client, namespace)
    assert spec["holderIdentity"] == "replica-b"
    assert spec["leaseTransitions"] == 1
    # The old leader notices on its next tick and steps down.
    clocks[0].advance(1.0)
    assert a.tick() is False
    assert a.is_leader is False


def test_renewals_keep_the_follower_out(
    pair: tuple[LeaderElector, LeaderElector], clocks: tuple[Clock, Clock]
) -> None:
    a, b = pair
    assert a.tick()
    for _ in range(12):
        for clock in clocks:
            clock.advance(5.0)
        assert a.tick() is True
        assert b.tick() is False


def test_release_hands_the_lease_over_at_once(
    pair: tuple[LeaderElector, LeaderElector], kube_client: kube.KubeClient, namespace: str
) -> None:
    a, b = pair
    assert a.tick()
    assert not b.tick()
    a.release()
    assert a.is_leader is False
    assert not _lease(kube_client, namespace).get("holderIdentity")
    assert b.tick() is True


def test_leader_steps_down_when_it_cannot_renew_within_the_deadline(
    pair: tuple[LeaderElector, LeaderElector],
    clocks: tuple[Clock, Clock],
    api_faults: DevCluster,
    namespace: str,
) -> None:
    a, _ = pair
    assert a.tick()
    api_faults.inject_fault(path_regex=f"/namespaces/{namespace}/leases", status=503)
    clocks[0].advance(5.0)
    assert a.tick() is True  # a blip within the renew deadline keeps leadership
    clocks[0].advance(6.0)
    assert a.tick() is False
    api_faults.clear_faults()
    assert a.tick() is True  # still its own lease, renewed again


def test_a_conflicting_write_is_not_leadership(
    pair: tuple[LeaderElector, LeaderElector],
    clocks: tuple[Clock, Clock],
    api_faults: DevCluster,
    namespace: str,
) -> None:
    a, b = pair
    assert a.tick()
    assert not b.tick()
    clocks[1].advance(16.0)
    # Another replica wrote between b's read and b's write.
    api_faults.inject_fault(
        path_regex=f"/namespaces/{namespace}/leases/", methods=["PUT"], status=409, times=1
    )
    assert b.tick() is False
    assert b.tick() is True
