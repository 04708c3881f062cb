"""A pause belongs to whoever made it, and a record that disagrees with its target is not trusted.

docs/status.md#pausing-each-kind and #when-a-pause-record-is-not-trusted. Every record case as
pure functions: ``sentinel_core.workload_kinds.read_record`` (what the record on a target says),
``sentinel_core.workload_kinds``' patches (pause, release, clean-up) landed with a real merge
patch, and ``decide`` seeing the result. The same cases on both clusters, through the operator and
the REST API: tests/operator/test_pause_ownership.py.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from analyses.api.serializers import merge_patch
from sentinel_core.conditions import Annotation, ConditionType, EventReason, Reason, Verdict
from sentinel_core.decision import Observation, decide
from sentinel_core.kinds import DAEMON_SET, DEPLOYMENT, KINDS, STATEFUL_SET
from sentinel_core.measurement import Measurement
from sentinel_core.pause_record import RecordState
from sentinel_core.spec import parse_spec
from sentinel_core.status import AnalysisStatus, Condition
from sentinel_core.workload_kinds import (
    PauseTarget,
    Released,
    TargetState,
    clean_up_patch,
    pause_patch,
    read_record,
    release_patch,
)

KEY, OTHER = "shop/latency", "shop/errors"
NOW = datetime(2026, 12, 6, 18, 0, tzinfo=UTC)
ROLLING_DS = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}
RECORD = {a.value for a in Annotation}


def deployment(*, paused: bool = False) -> dict[str, Any]:
    return {
        "metadata": {"name": "checkout", "namespace": "shop", "resourceVersion": "5"},
        "spec": {"paused": paused, "replicas": 3},
    }


def statefulset(*, partition: int = 0, updated: int = 2) -> dict[str, Any]:
    return {
        "metadata": {"name": "db", "namespace": "shop", "resourceVersion": "7"},
        "spec": {
            "replicas": 5,
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": partition}},
        },
        "status": {"updateRevision": "db-2", "currentRevision": "db-1", "updatedReplicas": updated},
    }


def daemonset(strategy: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": "agent", "namespace": "shop", "resourceVersion": "9"},
        "spec": {"updateStrategy": copy.deepcopy(strategy or ROLLING_DS)},
    }


def paused(kind: str, workload: dict[str, Any], key: str = KEY) -> dict[str, Any]:
    """Return ``workload`` after ``key``'s pause, as the decision core orders it."""
    holders = TargetState.from_workload(kind, workload).paused_by
    order = PauseTarget(
        "shop", "x", (*holders, key) if key not in holders else holders, NOW, f"{key}: slow", kind
    )
    return merge_patch(workload, pause_patch(order, workload))


def released(kind: str, workload: dict[str, Any], key: str = KEY) -> tuple[Released, dict]:
    change = release_patch(workload, key, kind=kind)
    after = merge_patch(workload, change.patch) if change.patch is not None else workload
    return change.outcome, after


def annotations(workload: dict[str, Any]) -> dict[str, Any]:
    return dict(workload["metadata"].get("annotations") or {})


def set_annotation(workload: dict[str, Any], key: Annotation, value: object) -> dict[str, Any]:
    changed = copy.deepcopy(workload)
    changed["metadata"]["annotations"][key.value] = value
    return changed


def drop_annotation(workload: dict[str, Any], key: Annotation) -> dict[str, Any]:
    changed = copy.deepcopy(workload)
    del changed["metadata"]["annotations"][key.value]
    return changed


# -- Deployment: who paused it, and what it was before ---------------------------------------


def test_a_running_deployment_is_paused_and_the_last_release_unpauses_it() -> None:
    held = paused(DEPLOYMENT, deployment())
    assert held["spec"]["paused"] is True
    assert annotations(held)[Annotation.PAUSED_BEFORE] == "false"
    assert read_record(DEPLOYMENT, held).state == RecordState.HELD
    outcome, after = released(DEPLOYMENT, held)
    assert outcome == Released.RESTORED
    assert after["spec"]["paused"] is False
    assert not RECORD & set(annotations(after))


def test_a_deployment_a_person_paused_stays_paused_after_the_analysis_lets_go() -> None:
    # The confused deputy: a person paused x; analysis b trips on it and records itself.
    held = paused(DEPLOYMENT, deployment(paused=True))
    assert annotations(held)[Annotation.PAUSED_BEFORE] == "true"
    change = release_patch(held, KEY, kind=DEPLOYMENT)
    assert change.outcome == Released.KEPT_HELD_BEFORE and not change.unpauses
    assert change.patch is not None and "spec" not in change.patch
    after = merge_patch(held, change.patch)
    assert after["spec"]["paused"] is True
    assert not RECORD & set(annotations(after))


def test_two_holders_release_only_with_the_last() -> None:
    first = paused(DEPLOYMENT, deployment())
    both = paused(DEPLOYMENT, first, OTHER)
    assert annotations(both)[Annotation.PAUSED_BY] == f"{KEY},{OTHER}"
    # The second pause kept what the first one recorded: the Deployment was running.
    assert annotations(both)[Annotation.PAUSED_BEFORE] == "false"
    change = release_patch(both, KEY, kind=DEPLOYMENT)
    assert (change.outcome, change.holders, change.held) == (Released.OTHERS_HOLD, (OTHER,), True)
    assert change.patch is not None and "spec" not in change.patch
    one_left = merge_patch(both, change.patch)
    assert one_left["spec"]["paused"] is True
    assert annotations(one_left)[Annotation.PAUSED_BY] == OTHER
    # The first analysis now holds nothing: its resume again changes nothing.
    assert release_patch(one_left, KEY, kind=DEPLOYMENT).outcome == Released.NOT_HELD
    outcome, after = released(DEPLOYMENT, one_left, OTHER)
    assert outcome == Released.RESTORED and after["spec"]["paused"] is False


@pytest.mark.parametrize(
    ("workload", "detail"),
    [
        (deployment(paused=True), "the Deployment was paused by someone else"),
        (deployment(), "the Deployment is not paused"),
    ],
)
def test_an_analysis_that_holds_nothing_changes_nothing(
    workload: dict[str, Any], detail: str
) -> None:
    change = release_patch(workload, KEY, kind=DEPLOYMENT)
    assert (change.outcome, change.patch, change.detail) == (Released.NOT_HELD, None, detail)


def test_an_analysis_not_named_by_the_record_changes_nothing_and_hears_who_holds_it() -> None:
    held = paused(DEPLOYMENT, deployment(), OTHER)
    change = release_patch(held, KEY, kind=DEPLOYMENT)
    assert (change.outcome, change.patch) == (Released.NOT_HELD, None)
    assert change.detail == f"it is held by {OTHER}"


def test_a_hand_resume_leaves_a_stale_record_that_is_cleaned_up_and_never_acted_on() -> None:
    held = paused(DEPLOYMENT, deployment())
    by_hand = copy.deepcopy(held)
    by_hand["spec"]["paused"] = False  # kubectl rollout resume
    state = TargetState.from_workload(DEPLOYMENT, by_hand)
    assert (state.record.state, state.paused_by, state.needs_clean_up) == (
        RecordState.STALE,
        (),
        True,
    )
    assert release_patch(by_hand, KEY, kind=DEPLOYMENT).outcome == Released.NOT_HELD
    patch = clean_up_patch(by_hand, DEPLOYMENT)
    assert patch is not None and "spec" not in patch
    assert patch["metadata"]["resourceVersion"] == "5"
    cleaned = merge_patch(by_hand, patch)
    assert not RECORD & set(annotations(cleaned))
    # A person pauses it again later: it is theirs, and a resume of the analysis says so.
    again = copy.deepcopy(cleaned)
    again["spec"]["paused"] = True
    assert release_patch(again, KEY, kind=DEPLOYMENT).detail == (
        "the Deployment was paused by someone else"
    )
    assert clean_up_patch(held, DEPLOYMENT) is None


# -- StatefulSet and DaemonSet: a record left stale by a hand resume --------------------------


def test_a_statefulset_canary_staged_after_a_hand_resume_is_never_restored() -> None:
    held = paused(STATEFUL_SET, statefulset(updated=2))
    assert held["spec"]["updateStrategy"]["rollingUpdate"]["partition"] == 3
    lowered = copy.deepcopy(held)
    lowered["spec"]["updateStrategy"]["rollingUpdate"]["partition"] = 0
    stale = read_record(STATEFUL_SET, lowered)
    assert (stale.state, stale.problem) == (
        RecordState.STALE,
        "its partition was lowered by hand to 0",
    )
    # Before the operator cleaned the record up, a person stages a canary at partition 5: the
    # record disagrees with it (5, not the 3 the pause set), so it is not held by Sentinel.
    canary = copy.deepcopy(lowered)
    canary["spec"]["updateStrategy"]["rollingUpdate"]["partition"] = 5
    state = TargetState.from_workload(STATEFUL_SET, canary)
    assert (state.paused, state.untrusted) == (False, "its partition is 5, the pause set 3")
    change = release_patch(canary, KEY, kind=STATEFUL_SET)
    assert (change.outcome, change.patch) == (Released.UNTRUSTED, None)
    # After the clean-up the canary is simply the person's: nothing to release either.
    cleaned = merge_patch(canary, clean_up_patch(canary, STATEFUL_SET))
    assert cleaned["spec"]["updateStrategy"]["rollingUpdate"]["partition"] == 5
    assert not RECORD & set(annotations(cleaned))
    assert release_patch(cleaned, KEY, kind=STATEFUL_SET).outcome == Released.NOT_HELD


def test_a_daemonset_deliberately_on_delete_after_a_hand_resume_stays_on_delete() -> None:
    held = paused(DAEMON_SET, daemonset())
    by_hand = copy.deepcopy(held)
    by_hand["spec"]["updateStrategy"] = copy.deepcopy(ROLLING_DS)
    assert read_record(DAEMON_SET, by_hand).state == RecordState.STALE
    cleaned = merge_patch(by_hand, clean_up_patch(by_hand, DAEMON_SET))
    deliberate = copy.deepcopy(cleaned)
    deliberate["spec"]["updateStrategy"] = {"type": "OnDelete"}
    change = release_patch(deliberate, KEY, kind=DAEMON_SET)
    assert (change.outcome, change.patch) == (Released.NOT_HELD, None)
    assert change.detail == "the DaemonSet was paused by someone else"
    # An analysis tripping on it now records that it was held before: its release keeps it.
    tripped = paused(DAEMON_SET, deliberate)
    assert annotations(tripped)[Annotation.PAUSED_BEFORE] == "true"
    assert Annotation.UPDATE_STRATEGY_BEFORE not in annotations(tripped)
    outcome, after = released(DAEMON_SET, tripped)
    assert outcome == Released.KEPT_HELD_BEFORE
    assert after["spec"]["updateStrategy"] == {"type": "OnDelete"}


def test_a_held_daemonset_is_restored_whole_by_the_last_holder() -> None:
    held = paused(DAEMON_SET, daemonset())
    # Only the type flips; rollingUpdate stays for the admission guard (docs/status.md).
    assert held["spec"]["updateStrategy"] == {**ROLLING_DS, "type": "OnDelete"}
    saved = annotations(held)[Annotation.UPDATE_STRATEGY_BEFORE]
    assert json.loads(saved) == ROLLING_DS and len(saved) < 100
    outcome, after = released(DAEMON_SET, paused(DAEMON_SET, held, OTHER), OTHER)
    assert outcome == Released.OTHERS_HOLD
    outcome, after = released(DAEMON_SET, after)
    assert (outcome, after["spec"]["updateStrategy"]) == (Released.RESTORED, ROLLING_DS)


# -- garbled, half-deleted, oversized records: not ours -------------------------------------

HELD_STS = paused(STATEFUL_SET, statefulset(updated=2))
HELD_DS = paused(DAEMON_SET, daemonset())
HELD_DEPLOYMENT = paused(DEPLOYMENT, deployment())
NESTED = '{"type":"RollingUpdate","rollingUpdate":' + "[" * 100_000 + "]" * 100_000 + "}"
SHALLOW_NESTED = (
    '{"type":"RollingUpdate","rollingUpdate":{"maxSurge":' + "[" * 200 + "]" * 200 + "}}"
)

A = Annotation
STS, DS, DEP = HELD_STS, HELD_DS, HELD_DEPLOYMENT
ON_DELETE_JSON = '{"type":"OnDelete"}'
UNKNOWN_FIELD_JSON = '{"type":"RollingUpdate","x":1}'
WIDE_L = "\uff4c"  # a fullwidth "l": looks like an analysis name, is not ASCII
GARBLED = [
    (STATEFUL_SET, drop_annotation(STS, A.PARTITION_BEFORE), "partition-before is missing"),
    (STATEFUL_SET, drop_annotation(STS, A.PAUSED_PARTITION), "paused-partition is missing"),
    (STATEFUL_SET, set_annotation(STS, A.PAUSED_PARTITION, "\u00b2"), "not a whole number"),
    (STATEFUL_SET, set_annotation(STS, A.PAUSED_PARTITION, "\u0663"), "not a whole number"),
    (STATEFUL_SET, set_annotation(STS, A.PAUSED_PARTITION, " 3"), "not a whole number"),
    (STATEFUL_SET, set_annotation(STS, A.PAUSED_PARTITION, "3" * 10), "not a whole number"),
    (STATEFUL_SET, set_annotation(STS, A.PARTITION_BEFORE, "4"), "above paused-partition"),
    (STATEFUL_SET, set_annotation(STS, A.PAUSED_PARTITION, 3), "not a string"),
    (DAEMON_SET, set_annotation(DS, A.UPDATE_STRATEGY_BEFORE, NESTED), "oversized"),
    (DAEMON_SET, set_annotation(DS, A.UPDATE_STRATEGY_BEFORE, SHALLOW_NESTED), "neither"),
    (DAEMON_SET, set_annotation(DS, A.UPDATE_STRATEGY_BEFORE, "not json"), "not JSON"),
    (DAEMON_SET, set_annotation(DS, A.UPDATE_STRATEGY_BEFORE, ON_DELETE_JSON), "not a"),
    (DAEMON_SET, set_annotation(DS, A.UPDATE_STRATEGY_BEFORE, UNKNOWN_FIELD_JSON), "unknown"),
    (DAEMON_SET, drop_annotation(DS, A.UPDATE_STRATEGY_BEFORE), "strategy-before is missing"),
    (DEPLOYMENT, drop_annotation(DEP, A.PAUSED_BEFORE), "paused-before is missing"),
    (DEPLOYMENT, set_annotation(DEP, A.PAUSED_BEFORE, "True"), "neither true nor false"),
    (DEPLOYMENT, drop_annotation(DEP, A.PAUSED_BY), "paused-by is missing"),
    (DEPLOYMENT, set_annotation(DEP, A.PAUSED_BY, "shop/a," * 5000), "oversized"),
    (DEPLOYMENT, set_annotation(DEP, A.PAUSED_BY, f"{KEY},{KEY}"), "distinct"),
    (DEPLOYMENT, set_annotation(DEP, A.PAUSED_BY, f"shop/{WIDE_L}atency"), "distinct"),
    (DEPLOYMENT, set_annotation(DEP, A.PARTITION_BEFORE, "0"), "does not belong"),
]  # fmt: skip


@pytest.mark.parametrize(("kind", "workload", "problem"), GARBLED)
def test_a_garbled_record_is_not_trusted_and_nothing_is_restored(
    kind: str, workload: dict[str, Any], problem: str
) -> None:
    record = read_record(kind, workload)
    assert record.state == RecordState.UNTRUSTED
    assert problem in record.problem
    change = release_patch(workload, KEY, kind=kind)
    assert (change.outcome, change.patch) == (Released.UNTRUSTED, None)
    assert problem in change.detail
    # The operator's clean-up removes the whole record and touches no spec.
    patch = clean_up_patch(workload, kind)
    assert patch is not None and set(patch) == {"metadata"}
    assert not RECORD & set(annotations(merge_patch(workload, patch)))
    # A new pause records the target afresh instead of building on the garbage.
    again = paused(kind, workload)
    assert read_record(kind, again).state == RecordState.HELD
    assert annotations(again)[Annotation.PAUSED_BY] == KEY


# Any text in any of the record's annotations, on any kind: reading, releasing, pausing and
# cleaning up never raise (the "²" that int() refused, RecursionError from deep JSON).
_VALUES = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["\u00b2", "\u0663", "-1", "9" * 12, "[" * 3000, NESTED, "true", "false", "3"]),
    st.integers(),
    st.none(),
)


@given(
    kind=st.sampled_from(KINDS),
    values=st.dictionaries(st.sampled_from(sorted(RECORD)), _VALUES, max_size=8),
    paused_now=st.booleans(),
    partition=st.one_of(st.integers(-3, 8), st.text(max_size=3)),
    on_delete=st.booleans(),
)
def test_no_record_makes_anything_raise(
    kind: str, values: dict[str, Any], paused_now: bool, partition: object, on_delete: bool
) -> None:
    workload: dict[str, Any] = {
        "metadata": {"resourceVersion": "1", "annotations": values},
        "spec": {
            "paused": paused_now,
            "replicas": 5,
            "updateStrategy": (
                {"type": "OnDelete"}
                if on_delete
                else {"type": "RollingUpdate", "rollingUpdate": {"partition": partition}}
            ),
        },
    }
    state = TargetState.from_workload(kind, workload)
    assert state.paused_by == () or state.record.state == RecordState.HELD
    change = release_patch(workload, KEY, kind=kind)
    if change.outcome == Released.UNTRUSTED:
        assert change.patch is None
    clean_up_patch(workload, kind)
    pause_patch(PauseTarget("shop", "x", (KEY,), NOW, "r", kind), workload)


# -- the decision: the status says so, an Event names it, counting starts afresh --------------

SPEC = parse_spec(
    {
        "target": {"kind": "StatefulSet", "name": "db"},
        "metrics": [{"name": "p99", "query": "q", "maxValue": 0.25}],
        "failureLimit": 1,
    }
)


def claimed_status() -> AnalysisStatus:
    paused_condition = Condition(
        type=ConditionType.ROLLOUT_PAUSED,
        status="True",
        reason=Reason.FAILURE_LIMIT_REACHED,
        message="paused StatefulSet db",
        last_transition_time=NOW,
        observed_generation=1,
    )
    # As the operator writes it: the count beside the Fail that made it, so the status check
    # (docs/status.md#what-the-operator-trusts-in-its-status) keeps it.
    return AnalysisStatus(
        observed_generation=1,
        last_verdict=Verdict.FAIL,
        failures=1,
        last_evaluation_time=NOW,
        paused_at=NOW,
    ).with_conditions(paused_condition)


def evaluate(status: AnalysisStatus, workload: dict[str, Any] | None) -> Any:
    assert not isinstance(SPEC, Exception)
    return decide(
        Observation(
            namespace="shop",
            name="latency",
            generation=1,
            spec=SPEC,
            previous=status,
            target=TargetState.from_workload(STATEFUL_SET, workload),
            measurements=(Measurement(metric="p99", value=0.9, text="0.9", series=1),),
            now=NOW,
        )
    )


def test_an_untrusted_record_is_reported_once_counted_afresh_and_never_paused_over() -> None:
    garbled = set_annotation(HELD_STS, Annotation.PAUSED_PARTITION, "²")
    decision = evaluate(claimed_status(), garbled)
    paused_condition = decision.status.condition(ConditionType.ROLLOUT_PAUSED)
    assert paused_condition is not None
    assert (paused_condition.status, paused_condition.reason) == (
        "False",
        Reason.UNTRUSTED_PAUSE_RECORD,
    )
    assert "StatefulSet db cannot be trusted" in paused_condition.message
    assert [e.reason for e in decision.events] == [EventReason.UNTRUSTED_PAUSE_RECORD]
    # Like a resume: the count starts again (this failure is its first), and the attempt that
    # saw it does not pause.
    assert (decision.status.failures, decision.pause, decision.status.paused_at) == (1, None, None)
    # The operator removed the record meanwhile: the reason stays, the event is not repeated,
    # and the next failure may pause again with a fresh record.
    cleaned = merge_patch(garbled, clean_up_patch(garbled, STATEFUL_SET))
    later = evaluate(decision.status, cleaned)
    assert later.pause is not None
    assert [e.reason for e in later.events] == [EventReason.ROLLOUT_PAUSED]


def test_a_record_removed_from_a_held_target_is_not_this_analysis_pause_any_more() -> None:
    on_delete = statefulset()
    on_delete["spec"]["updateStrategy"] = {"type": "OnDelete"}
    decision = evaluate(claimed_status(), on_delete)
    paused_condition = decision.status.condition(ConditionType.ROLLOUT_PAUSED)
    assert paused_condition is not None
    assert paused_condition.reason == Reason.UNTRUSTED_PAUSE_RECORD
    assert "the pause record was removed from the target" in paused_condition.message


def test_an_analysis_the_untrusted_record_does_not_concern_is_not_told() -> None:
    garbled = set_annotation(
        paused(STATEFUL_SET, statefulset(), OTHER), Annotation.PAUSED_BEFORE, "?"
    )
    decision = evaluate(AnalysisStatus(observed_generation=1), garbled)
    assert EventReason.UNTRUSTED_PAUSE_RECORD not in [e.reason for e in decision.events]


def test_a_spec_pointed_elsewhere_reports_the_pause_left_behind_and_resumes_nothing() -> None:
    assert not isinstance(SPEC, Exception)
    observation = Observation(
        namespace="shop",
        name="latency",
        generation=2,  # edited with kubectl: the status was written for generation 1
        spec=SPEC,
        previous=claimed_status(),
        target=TargetState.from_workload(STATEFUL_SET, statefulset()),
        measurements=(Measurement(metric="p99", value=0.1, text="0.1", series=1),),
        now=NOW,
        left_behind=("StatefulSet old-db",),
    )
    decision = decide(observation)
    paused_condition = decision.status.condition(ConditionType.ROLLOUT_PAUSED)
    assert paused_condition is not None
    assert (paused_condition.status, paused_condition.reason) == ("False", Reason.NOT_PAUSED)
    assert "still holds StatefulSet old-db paused" in paused_condition.message
    # Not a person's resume of the new target, and nothing to release by the operator.
    assert [e.reason for e in decision.events] == [EventReason.PAUSE_LEFT_BEHIND]
    assert decision.pause is None
