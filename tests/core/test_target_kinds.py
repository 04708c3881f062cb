"""Pausing and releasing a StatefulSet or a DaemonSet: the pure patches.

docs/status.md#pausing-each-kind.

``sentinel_core.workload_kinds`` computes them from the object as read; a StatefulSet is frozen
by its partition, a DaemonSet by ``OnDelete``, each reversible from its annotations, and a person
undoing either by hand reads as not paused (``ResumedByUser``). The same patches against the
real controllers: tests/realcluster/test_statefulset_daemonset.py.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from analyses.api.serializers import merge_patch
from sentinel_core.conditions import Annotation
from sentinel_core.kinds import DAEMON_SET, STATEFUL_SET, default_by
from sentinel_core.spec import InvalidSpecError, parse_spec
from sentinel_core.status import Rollout
from sentinel_core.workload_kinds import (
    PauseTarget,
    Released,
    TargetState,
    controller_revisions,
    is_new,
    is_paused,
    next_revision_rollout,
    pause_patch,
    release_patch,
)

KEY = "shop/db"
NOW = datetime(2026, 12, 3, 6, 0, tzinfo=UTC)
ROLLING_DS = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2, "maxSurge": 0}}


def statefulset(
    *, replicas: int = 5, partition: int = 0, updated: int = 2, rolling: bool = True
) -> dict[str, Any]:
    """A StatefulSet mid-rollout: ``updated`` of its top ordinals at the new revision."""
    return {
        "metadata": {"name": "db", "namespace": "shop", "resourceVersion": "7"},
        "spec": {
            "replicas": replicas,
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": partition}},
        },
        "status": {
            "updateRevision": "db-new",
            "currentRevision": "db-old" if rolling else "db-new",
            "updatedReplicas": updated,
        },
    }


def daemonset(strategy: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": "agent", "namespace": "shop", "resourceVersion": "9"},
        "spec": {"updateStrategy": copy.deepcopy(strategy or ROLLING_DS)},
    }


def order(kind: str, *paused_by: str) -> PauseTarget:
    return PauseTarget("shop", "db", paused_by or (KEY,), NOW, f"{KEY}: too slow", kind=kind)


def paused(kind: str, workload: dict[str, Any], *paused_by: str) -> dict[str, Any]:
    """Return ``workload`` after the pause patch, as a merge patch lands on the API server."""
    patch = pause_patch(order(kind, *paused_by), workload)
    assert patch["metadata"]["resourceVersion"] == workload["metadata"]["resourceVersion"]
    return merge_patch(workload, patch)


def released(kind: str, workload: dict[str, Any], key: str = KEY) -> dict[str, Any]:
    change = release_patch(workload, key, kind=kind)
    assert change.patch is not None
    return merge_patch(workload, change.patch)


def annotations(workload: dict[str, Any]) -> dict[str, str]:
    return dict(workload["metadata"].get("annotations") or {})


# -- StatefulSet ---------------------------------------------------------------------------------


def test_a_statefulset_is_frozen_at_its_lowest_updated_ordinal() -> None:
    before = statefulset(updated=2)
    assert not is_paused(STATEFUL_SET, before)
    held = paused(STATEFUL_SET, before)
    # Ordinals 4 and 3 run the new revision; 3 is the lowest, so 0-2 stay as they are.
    assert held["spec"]["updateStrategy"]["rollingUpdate"]["partition"] == 3
    assert held["spec"]["updateStrategy"]["type"] == "RollingUpdate"
    saved = annotations(held)
    assert saved[Annotation.PAUSED_PARTITION] == "3"
    assert saved[Annotation.PARTITION_BEFORE] == "0"
    assert saved[Annotation.PAUSED_BY] == KEY
    assert saved[Annotation.PAUSED_BEFORE] == "false"
    state = TargetState.from_workload(STATEFUL_SET, held)
    assert (state.exists, state.paused, state.paused_by) == (True, True, (KEY,))


def test_a_statefulset_without_a_rollout_is_frozen_whole_and_never_lowered() -> None:
    assert (
        paused(STATEFUL_SET, statefulset(rolling=False))["spec"]["updateStrategy"]["rollingUpdate"][
            "partition"
        ]
        == 5
    )
    # A partition already above the updated ordinals (a canary) is kept, not lowered.
    held = paused(STATEFUL_SET, statefulset(partition=4, updated=0))
    assert held["spec"]["updateStrategy"]["rollingUpdate"]["partition"] == 5
    assert annotations(held)[Annotation.PARTITION_BEFORE] == "4"
    canary = paused(STATEFUL_SET, statefulset(partition=4, updated=1, rolling=True))
    assert canary["spec"]["updateStrategy"]["rollingUpdate"]["partition"] == 4


def test_release_restores_the_statefulset_partition_and_forgets_it() -> None:
    held = paused(STATEFUL_SET, statefulset(partition=1, updated=2))
    change = release_patch(held, KEY, kind=STATEFUL_SET)
    assert change.unpauses
    after = released(STATEFUL_SET, held)
    assert after["spec"]["updateStrategy"]["rollingUpdate"]["partition"] == 1
    assert not is_paused(STATEFUL_SET, after)
    assert not {a.value for a in Annotation} & set(annotations(after))


def test_lowering_the_partition_by_hand_is_a_resume() -> None:
    held = paused(STATEFUL_SET, statefulset(updated=2))
    by_hand = copy.deepcopy(held)
    by_hand["spec"]["updateStrategy"]["rollingUpdate"]["partition"] = 0
    assert not is_paused(STATEFUL_SET, by_hand)
    # Raising it further is a person's own partition, not the pause: the record no longer
    # agrees with the target and is not trusted (tests/core/test_pause_record.py).
    higher = copy.deepcopy(held)
    higher["spec"]["updateStrategy"]["rollingUpdate"]["partition"] = 5
    assert not is_paused(STATEFUL_SET, higher)
    assert TargetState.from_workload(STATEFUL_SET, higher).untrusted
    # The next pause after a resume by hand saves what the person left, not the old value.
    again = paused(STATEFUL_SET, by_hand)
    assert annotations(again)[Annotation.PARTITION_BEFORE] == "0"


def test_a_second_analysis_keeps_the_saved_partition() -> None:
    first = paused(STATEFUL_SET, statefulset(partition=0, updated=2))
    second = paused(STATEFUL_SET, first, KEY, "shop/other")
    saved = annotations(second)
    # What is restored is still the partition before the first pause.
    assert saved[Annotation.PARTITION_BEFORE] == "0"
    assert saved[Annotation.PAUSED_BY] == f"{KEY},shop/other"
    # The first release only takes its analysis out of paused-by; the last one restores.
    after = released(STATEFUL_SET, second, "shop/other")
    assert after["spec"]["updateStrategy"]["rollingUpdate"]["partition"] == 3
    assert annotations(after)[Annotation.PAUSED_BY] == KEY
    assert annotations(after)[Annotation.PARTITION_BEFORE] == "0"
    last = released(STATEFUL_SET, after, KEY)
    assert last["spec"]["updateStrategy"]["rollingUpdate"]["partition"] == 0
    assert not {a.value for a in Annotation} & set(annotations(last))


def test_an_on_delete_statefulset_is_held_already_and_left_alone() -> None:
    on_delete = statefulset()
    on_delete["spec"]["updateStrategy"] = {"type": "OnDelete"}
    assert is_paused(STATEFUL_SET, on_delete)
    patch = pause_patch(order(STATEFUL_SET), on_delete)
    assert "spec" not in patch
    held = merge_patch(on_delete, patch)
    assert annotations(held)[Annotation.PAUSED_BEFORE] == "true"
    # Nothing of ours to undo: the release only removes the record.
    change = release_patch(held, KEY, kind=STATEFUL_SET)
    assert not change.unpauses
    assert change.outcome == Released.KEPT_HELD_BEFORE
    assert change.patch is not None and "spec" not in change.patch


# -- DaemonSet -----------------------------------------------------------------------------------


def test_a_daemonset_is_frozen_with_on_delete_and_restored_whole() -> None:
    before = daemonset()
    assert not is_paused(DAEMON_SET, before)
    held = paused(DAEMON_SET, before)
    # Only the type flips: rollingUpdate stays for the admission guard to compare.
    assert held["spec"]["updateStrategy"] == {**ROLLING_DS, "type": "OnDelete"}
    assert json.loads(annotations(held)[Annotation.UPDATE_STRATEGY_BEFORE]) == ROLLING_DS
    assert is_paused(DAEMON_SET, held)
    after = released(DAEMON_SET, held)
    assert after["spec"]["updateStrategy"] == ROLLING_DS
    assert not is_paused(DAEMON_SET, after)
    assert not {a.value for a in Annotation} & set(annotations(after))


def test_restoring_the_daemonset_strategy_by_hand_is_a_resume() -> None:
    held = paused(DAEMON_SET, daemonset())
    by_hand = copy.deepcopy(held)
    by_hand["spec"]["updateStrategy"] = {"type": "RollingUpdate"}
    assert not is_paused(DAEMON_SET, by_hand)
    assert TargetState.from_workload(DAEMON_SET, by_hand).paused is False


def test_a_second_pause_of_a_held_daemonset_saves_nothing_new() -> None:
    held = paused(DAEMON_SET, daemonset())
    patch = pause_patch(order(DAEMON_SET, KEY, "shop/other"), held)
    assert "spec" not in patch
    assert Annotation.UPDATE_STRATEGY_BEFORE not in patch["metadata"]["annotations"]
    # A DaemonSet a person keeps on OnDelete has nothing saved: a release leaves it so.
    owned = daemonset({"type": "OnDelete"})
    assert is_paused(DAEMON_SET, owned)
    assert "spec" not in pause_patch(order(DAEMON_SET), owned)
    assert not release_patch(
        merge_patch(owned, pause_patch(order(DAEMON_SET), owned)), KEY, kind=DAEMON_SET
    ).unpauses


@pytest.mark.parametrize("garbage", ["", "not json", "[1]", '{"type": "Sideways"}'])
def test_an_unreadable_saved_strategy_is_never_written_back(garbage: str) -> None:
    held = paused(DAEMON_SET, daemonset())
    held["metadata"]["annotations"][Annotation.UPDATE_STRATEGY_BEFORE] = garbage
    change = release_patch(held, KEY, kind=DAEMON_SET)
    assert not change.unpauses
    # Not trusted: nothing is written at all (the operator removes the record).
    assert (change.outcome, change.patch) == (Released.UNTRUSTED, None)


# -- the spec ------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet", "DaemonSet"])
def test_each_kind_parses_and_compare_by_follows_it(kind: str) -> None:
    metric = {"name": "latency-vs-old", "query": "q", "compare": {}}
    written = {**metric, "name": "by-hand", "compare": {"by": "version"}}
    spec = parse_spec({"target": {"kind": kind, "name": "db"}, "metrics": [metric, written]})
    assert spec.target.kind == kind
    defaulted, explicit = spec.metrics
    assert defaulted.compare is not None and defaulted.compare.by == default_by(kind)
    assert explicit.compare is not None and explicit.compare.by == "version"
    assert default_by(kind) == (
        "pod_template_hash" if kind == "Deployment" else "controller_revision_hash"
    )
    # The default is written out, so the REST API and the mirror show what is used.
    assert spec.to_dict()["metrics"][0]["compare"]["by"] == default_by(kind)


@pytest.mark.parametrize("name", [{}, [], None, 3])
def test_a_metric_name_of_the_wrong_type_is_a_field_error_not_a_crash(name: object) -> None:
    raw = {
        "target": {"kind": "StatefulSet", "name": "db"},
        "metrics": [{"name": name, "query": "q", "compare": {}}],
    }
    with pytest.raises(InvalidSpecError) as refused:
        parse_spec(raw)
    assert [e.field for e in refused.value.errors] == ["spec.metrics[0].name"]


# -- rollout detection (docs/status.md#rollouts-statusrollout) -------------------------------

CREATED = datetime(2026, 12, 3, 5, 59, 41, tzinfo=UTC)


def _caught_up(observed: int = 2, **status: object) -> dict[str, Any]:
    """A workload at generation 2 whose controller has seen generation ``observed``."""
    return {"metadata": {"generation": 2}, "status": {"observedGeneration": observed, **status}}


def _sts_status(update: str, current: str, *, observed: int = 2) -> dict[str, Any]:
    return _caught_up(observed, updateRevision=update, currentRevision=current)


def _ds_status(updated: int, desired: int, *, observed: int = 2) -> dict[str, Any]:
    return _caught_up(observed, updatedNumberScheduled=updated, desiredNumberScheduled=desired)


def test_a_statefulset_rolls_out_while_its_update_revision_is_not_its_current_one() -> None:
    rolling = controller_revisions(STATEFUL_SET, _sts_status("db-2", "db-1"))
    assert (rolling.update, rolling.old, rolling.caught_up) == ("db-2", ("db-1",), True)
    assert rolling.rolling and rolling.hashes == ("db-2", ("db-1",))
    done = controller_revisions(STATEFUL_SET, _sts_status("db-2", "db-2"))
    assert done.update == "db-2" and not done.rolling
    behind = controller_revisions(STATEFUL_SET, _sts_status("db-1", "db-1", observed=1))
    assert not behind.caught_up
    assert controller_revisions(STATEFUL_SET, {"status": {}}).update is None


def test_a_daemonset_rolls_out_while_fewer_pods_are_updated_than_scheduled() -> None:
    ranked = ["h3", "h2", "h1"]
    rolling = controller_revisions(DAEMON_SET, _ds_status(2, 4), ranked)
    assert (rolling.update, rolling.old) == ("h3", ("h2", "h1"))
    done = controller_revisions(DAEMON_SET, _ds_status(4, 4), ranked)
    assert done.update == "h3" and not done.rolling
    # Its controller has not seen the latest template: the pods cannot all be updated yet.
    assert controller_revisions(DAEMON_SET, _ds_status(4, 4, observed=1), ranked).rolling
    assert controller_revisions(DAEMON_SET, _ds_status(0, 0), []).update is None


def test_a_new_revision_is_a_rollout_begun_when_its_controller_revision_was_created() -> None:
    first = next_revision_rollout(
        None,
        controller_revisions(STATEFUL_SET, _sts_status("db-1", "db-1")),
        created=CREATED,
        now=NOW,
    )
    # Not seen to begin, and not under way: recorded without a start.
    assert first == Rollout(template_hash="db-1")
    rolling = controller_revisions(STATEFUL_SET, _sts_status("db-2", "db-1"))
    second = next_revision_rollout(first, rolling, created=CREATED, now=NOW)
    assert second == Rollout(template_hash="db-2", started_at=CREATED)
    assert is_new(first, second)
    # The same revision read again, under way or finished: the same rollout.
    assert next_revision_rollout(second, rolling, created=None, now=NOW) is second
    done = controller_revisions(STATEFUL_SET, _sts_status("db-2", "db-2"))
    assert next_revision_rollout(second, done, created=None, now=NOW) is second
    # A revision whose creation is not this rollout's (a rollback reused it): now.
    back = controller_revisions(STATEFUL_SET, _sts_status("db-1", "db-2"))
    assert next_revision_rollout(second, back, created=None, now=NOW).started_at == NOW


def test_nothing_is_detected_before_the_controller_has_seen_the_change() -> None:
    seen = Rollout(template_hash="db-1", started_at=CREATED)
    # The template changed (generation 2) but the controller still names the old revision.
    behind = controller_revisions(STATEFUL_SET, _sts_status("db-1", "db-1", observed=1))
    assert next_revision_rollout(seen, behind, created=None, now=NOW) is seen
    stale = controller_revisions(STATEFUL_SET, _sts_status("db-0", "db-0", observed=1))
    assert next_revision_rollout(seen, stale, created=None, now=NOW) is seen
    assert (
        next_revision_rollout(seen, controller_revisions(DAEMON_SET, {}), created=None, now=NOW)
        is seen
    )


def test_a_rollout_under_way_when_first_seen_keeps_its_known_start() -> None:
    rolling = controller_revisions(DAEMON_SET, _ds_status(1, 4), ["h2", "h1"])
    first = next_revision_rollout(None, rolling, created=CREATED, now=NOW)
    assert first == Rollout(template_hash="h2", started_at=CREATED)
    assert not is_new(None, first)
