"""The operator's seal over the count and the sequential evidence (sentinel_core.status_seal).

A status the operator could have written (``failures: 2`` beside a Fail, a sequential state
whose counts add up) passes every check of ``status_check``; only the seal tells it from one a
person forged. What the seal does not verify is counted afresh: the count from 0, the evidence
read again from the rollout's start.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from sentinel_core.conditions import EventReason
from sentinel_core.decision import decide, resume
from sentinel_core.measurement import Measurement
from sentinel_core.metric_kinds.sequential import Reading, instant
from sentinel_core.status import AnalysisStatus
from sentinel_core.status_check import check
from sentinel_core.status_seal import seal, unseal
from tests.core.test_sequential_read import T0, Story, bad_steps

KEY = b"k" * 32
UID = "7f1c0b8e-0000-4000-8000-000000000001"


def through_api(status: AnalysisStatus, sealed: str) -> tuple[AnalysisStatus, str]:
    """Return ``status`` and its seal as read back: JSON, with 1.0 written as 1 (as Go does)."""
    text = json.dumps({**status.to_dict(), "seal": sealed})

    def integral(value: float) -> float | int:
        return int(value) if value.is_integer() else value

    raw = json.loads(text, parse_float=lambda s: integral(float(s)))
    return AnalysisStatus.from_dict(raw), raw["seal"]


def counted() -> AnalysisStatus:
    """A status the operator wrote: three counted steps, a Fail and failures 1."""
    story = Story(failureLimit=3)
    story.world.now = T0.replace(minute=4)
    story.evaluate(bad_steps(1, 3, new_bad=200, old_bad=1))
    status = story.world.status
    assert status.metric_results[0].sequential is not None and status.failures >= 1
    return status


def test_what_the_operator_sealed_reads_back_whole() -> None:
    status = counted()
    read, sealed = through_api(status, seal(status, key=KEY, uid=UID))
    checked = unseal(read, sealed, key=KEY, uid=UID)
    assert checked.discarded == () and checked.status == read
    assert read.metric_results[0].sequential == status.metric_results[0].sequential


def test_a_count_the_operator_could_have_written_but_did_not_is_counted_from_zero() -> None:
    status = counted()
    sealed = seal(status, key=KEY, uid=UID)
    # failures 2 beside a Fail passes every check of the status alone.
    forged = replace(status, failures=2)
    assert check(forged, spec=None, generation=1, now=T0.replace(minute=5)).discarded == ()
    checked = unseal(forged, sealed, key=KEY, uid=UID)
    (sentence,) = checked.discarded
    assert sentence.startswith("failures 2 has a seal the operator did not make")
    assert sentence.endswith("counted again from 0")
    assert checked.status.failures == 0
    # The evidence, untouched, still verifies.
    assert checked.status.metric_results == status.metric_results


def test_a_self_consistent_forged_state_is_read_again_from_the_rollout() -> None:
    status = counted()
    sealed = seal(status, key=KEY, uid=UID)
    (result,) = status.metric_results
    assert result.sequential is not None
    forged_state = replace(result.sequential, new_bad=result.sequential.new_bad * 2)
    forged = replace(status, metric_results=(replace(result, sequential=forged_state),))
    checked = unseal(forged, sealed, key=KEY, uid=UID)
    (sentence,) = checked.discarded
    assert sentence.startswith("the sequential state of errors-vs-old has a seal the operator")
    assert sentence.endswith("the evidence starts afresh from the rollout")
    assert checked.status.metric_results[0].sequential is None
    # The count stands: its part of the seal still verifies.
    assert checked.status.failures == status.failures


@pytest.mark.parametrize(
    "sealed",
    [None, "", 7, "v1", "v1::", "v2:" + "0" * 32 + ":" + "0" * 32, ["v1"]],
    ids=["none", "empty", "number", "version", "blank", "v2", "list"],
)
def test_a_missing_or_garbled_seal_discards_both_parts_without_crashing(sealed: Any) -> None:
    status = counted()
    checked = unseal(status, sealed, key=KEY, uid=UID)
    assert len(checked.discarded) == 2
    assert checked.status.failures == 0
    assert checked.status.metric_results[0].sequential is None
    # The verdicts, the pause's conditions and the rollout are not the seal's to drop.
    assert checked.status.last_verdict == status.last_verdict
    assert checked.status.conditions == status.conditions
    assert checked.status.rollout == status.rollout


def test_a_status_written_before_the_seal_keeps_its_pause_and_says_why_it_recounts() -> None:
    status = counted()
    checked = unseal(status, None, key=KEY, uid=UID)
    assert all("has no seal (written by someone else, or before" in s for s in checked.discarded)
    assert checked.status.conditions == status.conditions


@pytest.mark.parametrize("uid, key", [("another-uid", KEY), (UID, b"another key")])
def test_a_seal_of_another_analysis_or_another_key_does_not_verify(uid: str, key: bytes) -> None:
    status = counted()
    checked = unseal(status, seal(status, key=key, uid=uid), key=KEY, uid=UID)
    assert len(checked.discarded) == 2


def test_a_resume_keeps_the_evidence_and_its_reset_count_needs_no_seal() -> None:
    status = counted()
    sealed = seal(status, key=KEY, uid=UID)
    resumed = resume(status, now=T0.replace(minute=6), actor="alice").status
    assert resumed.failures == 0
    checked = unseal(resumed, sealed, key=KEY, uid=UID)
    assert checked.discarded == ()
    assert checked.status.metric_results == status.metric_results


def test_decide_reports_what_the_seal_dropped_in_the_status_discarded_event() -> None:
    story = Story()
    story.world.now = T0.replace(minute=4)
    story.evaluate(bad_steps(1, 3))
    dropped = unseal(story.world.status, None, key=KEY, uid=UID)
    story.world.status = dropped.status
    reading = Reading("new1", ("old1",), tuple(bad_steps(1, 4)))
    observed = story.world.observe((Measurement(metric="errors-vs-old", reading=reading),))
    decision = decide(replace(observed, rollout=story.rollout, discarded=dropped.discarded))
    (event,) = [e for e in decision.events if e.reason == EventReason.STATUS_DISCARDED]
    assert event.type == "Warning"
    assert "the sequential state of errors-vs-old has no seal" in event.message
    # Read again from the rollout's start: four steps, not the three it had.
    state = decision.status.metric_results[0].sequential
    assert state is not None and state.since == instant(T0) and state.steps == 4
