"""Adopting a pause recorded before ``paused-before`` existed (sentinel_core.pause_upgrade).

An earlier version's record is this version's, less ``paused-before``: made here by dropping it
from a pause of each kind. The reconciler writes the patch; end to end in
``tests/operator/test_forged_status.py``.
"""

from __future__ import annotations

import pytest

from analyses.api.serializers import merge_patch
from sentinel_core.conditions import Annotation
from sentinel_core.kinds import DAEMON_SET, DEPLOYMENT, STATEFUL_SET
from sentinel_core.pause_record import RecordState
from sentinel_core.pause_upgrade import adoption_patch
from sentinel_core.workload_kinds import read_record, release_patch
from tests.core.test_pause_record import (
    KEY,
    OTHER,
    daemonset,
    deployment,
    drop_annotation,
    paused,
    set_annotation,
    statefulset,
)

WORKLOADS = {DEPLOYMENT: deployment, STATEFUL_SET: statefulset, DAEMON_SET: daemonset}


def legacy(kind: str) -> dict:
    return drop_annotation(paused(kind, WORKLOADS[kind]()), Annotation.PAUSED_BEFORE)


@pytest.mark.parametrize("kind", [DEPLOYMENT, STATEFUL_SET, DAEMON_SET])
def test_an_earlier_versions_pause_is_adopted_and_then_released_as_it_would_have_been(
    kind: str,
) -> None:
    workload = legacy(kind)
    # Untrusted as it stands: a resume would need kubectl.
    assert read_record(kind, workload).state == RecordState.UNTRUSTED
    patch = adoption_patch(kind, workload, KEY)
    assert patch == {
        "metadata": {
            "resourceVersion": workload["metadata"]["resourceVersion"],
            "annotations": {Annotation.PAUSED_BEFORE.value: "false"},
        }
    }
    adopted = merge_patch(workload, patch)
    record = read_record(kind, adopted)
    assert (record.state, record.holders, record.held_before) == (RecordState.HELD, (KEY,), False)
    # Once: the adopted record has paused-before, so there is nothing more to adopt.
    assert adoption_patch(kind, adopted, KEY) is None
    # Released by its holder: the target gets back what it had before the pause.
    change = release_patch(adopted, KEY, kind=kind)
    assert change.patch is not None
    after = merge_patch(adopted, change.patch)
    assert read_record(kind, after).state == RecordState.NONE
    assert after["spec"] == WORKLOADS[kind]()["spec"]


def test_a_record_of_another_analysis_is_not_adopted() -> None:
    assert adoption_patch(DEPLOYMENT, legacy(DEPLOYMENT), OTHER) is None


def test_a_record_with_paused_before_or_none_at_all_is_not_adopted() -> None:
    assert adoption_patch(DEPLOYMENT, paused(DEPLOYMENT, deployment()), KEY) is None
    assert adoption_patch(DEPLOYMENT, deployment(paused=True), KEY) is None


def test_an_earlier_record_that_disagrees_with_the_target_stays_untrusted() -> None:
    # Resumed by hand since (the Deployment unpaused): not held, so not adopted.
    resumed = legacy(DEPLOYMENT)
    resumed["spec"]["paused"] = False
    assert adoption_patch(DEPLOYMENT, resumed, KEY) is None
    # A StatefulSet whose partition was raised since the pause, a garbled partition.
    raised = legacy(STATEFUL_SET)
    raised["spec"]["updateStrategy"]["rollingUpdate"]["partition"] = 4
    assert adoption_patch(STATEFUL_SET, raised, KEY) is None
    garbled = set_annotation(legacy(STATEFUL_SET), Annotation.PAUSED_PARTITION, "²")
    assert adoption_patch(STATEFUL_SET, garbled, KEY) is None
