"""The mirror holds whatever the API server accepts, and one bad object never fails a list.

The CRD allows condition reasons of 1,024 characters; ``ready_reason`` holds 64. Mirror fields
are cut to their column sizes. ``sync_all`` mirrors each listed object on its own: an object
without a uid, with an identity longer than its column, or with a count beyond any integer
column is logged and skipped, and the rest are mirrored (a failing sync made the watch relist,
forever). Objects outside the listed namespaces are never mirrored.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from kubernetes import client as k8s

from analyses import mirror
from analyses.models import Analysis
from sentinel_cluster import kube
from sentinel_operator.watch import AnalysisWatch
from tests.analyses.resources import paused_status, resource

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
LISTED = NOW - timedelta(seconds=1)


def _with_ready_reason(obj: dict[str, Any], reason: str) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    for item in obj["status"]["conditions"]:
        if item["type"] == "Ready":
            item["reason"] = reason
    return obj


def _huge_failures(obj: dict[str, Any]) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    # Valid JSON and within the CRD's integer type's reach for a careless writer; beyond int64.
    obj["status"]["failures"] = 2**70
    return obj


def _live() -> set[str]:
    return set(Analysis.objects.live().values_list("name", flat=True))


def test_long_reason_and_target_are_cut_to_their_columns() -> None:
    obj = _with_ready_reason(resource(status=paused_status()), "R" * 1024)
    obj["spec"]["target"]["name"] = "t" * 300

    row, written = mirror.upsert_from_resource(obj, now=NOW)

    assert written
    row.refresh_from_db()
    assert row.ready_reason == "R" * 64
    assert row.target_name == "t" * 253
    # The resource itself is kept whole: only the denormalised columns are cut.
    assert row.status["conditions"][0]["reason"] == "R" * 1024


def test_long_reason_in_a_resync_is_cut_too() -> None:
    obj = _with_ready_reason(resource(status=paused_status()), "Q" * 1024)
    result = mirror.sync_all([obj], listed_at=LISTED, now=NOW)
    assert (result.created, result.skipped) == (1, 0)
    assert Analysis.objects.get(name="checkout").ready_reason == "Q" * 64


def test_sync_all_skips_unmirrorable_objects_and_mirrors_the_rest() -> None:
    no_uid = resource("no-uid", uid="uid-x")
    del no_uid["metadata"]["uid"]
    long_uid = resource("long-uid", uid="u" * 65)
    huge = _huge_failures(resource("huge", uid="uid-huge", status=paused_status()))
    listed = [
        resource("first", uid="uid-first"),
        no_uid,
        long_uid,
        huge,
        resource("last", uid="uid-last"),
    ]

    result = mirror.sync_all(listed, listed_at=LISTED, now=NOW)

    assert _live() == {"first", "last"}
    assert (result.created, result.skipped, result.deleted) == (2, 3, 0)


def test_unmirrorable_update_keeps_the_existing_row() -> None:
    good = resource("huge", uid="uid-huge", status=paused_status())
    mirror.sync_all([good], listed_at=LISTED, now=NOW)
    bad = _huge_failures(good)
    bad["metadata"]["resourceVersion"] = "101"

    later = NOW + timedelta(minutes=5)
    result = mirror.sync_all([bad], listed_at=later - timedelta(seconds=1), now=later)

    # Skipped, not taken for gone: the row stays live with what it last held.
    assert (result.skipped, result.deleted) == (1, 0)
    row = Analysis.objects.get(uid="uid-huge")
    assert row.deleted_at is None and row.resource_version == "100" and row.failures == 3


def test_sync_all_never_mirrors_outside_the_namespaces() -> None:
    inside = resource("inside", namespace="a", uid="uid-a")
    outside = resource("outside", namespace="b", uid="uid-b")

    result = mirror.sync_all([inside, outside], listed_at=LISTED, namespaces=["a"], now=NOW)

    assert _live() == {"inside"}
    assert (result.created, result.skipped) == (1, 1)


def test_watch_skips_an_unmirrorable_event_and_moves_on() -> None:
    # The watch is driven event by event here; its client is never called.
    watch = AnalysisWatch(kube.KubeClient(k8s.ApiClient()), namespace="shop", now=lambda: NOW)
    bad = _huge_failures(resource(status=paused_status(), resource_version="200"))
    outside = resource("elsewhere", namespace="other", uid="uid-o", resource_version="201")

    watch.apply(kube.WatchEvent(type="ADDED", object=bad))
    watch.apply(kube.WatchEvent(type="ADDED", object=outside))
    watch.apply(
        kube.WatchEvent(type="ADDED", object=resource("next", uid="uid-n", resource_version="202"))
    )

    assert watch.resource_version == "202"
    assert _live() == {"next"}
    assert watch.events == 3
