"""What a status write carries after a 409: the decided status, and a resume made meanwhile.

The reconciler decides a status from the analysis as it read it; when the write meets a 409 it
reads the analysis again and writes again, without measuring or counting again
(docs/operator.md#conflicts). Only two parties write the status: the operator and a person's
resume from the UI or the REST API (``resume``). ``reapplied`` is what the operator writes onto
the fresh copy: its decided status, except when a person resumed in between, whose resume wins.
``after_conflict`` is the whole decision that goes on from there: that status, and the
decision's actions without a second announcement of the same resume.
"""

from __future__ import annotations

from dataclasses import replace

from sentinel_core import notify
from sentinel_core.conditions import ConditionStatus, ConditionType, EventReason, Reason
from sentinel_core.decision._decide import Decision
from sentinel_core.status import AnalysisStatus

# What ``resume`` writes besides the RolloutPaused condition; taken from the fresh copy when a
# resume came in between. tests/core/test_conflict.py checks that ``resume`` changes no other field.
RESUME_FIELDS = ("failures", "window", "paused_at")


def reapplied(
    decided: AnalysisStatus, *, read: AnalysisStatus, fresh: AnalysisStatus, paused: bool
) -> AnalysisStatus:
    """Return the status to write onto the fresh copy after a 409.

    ``read`` is the status the decision started from, ``fresh`` the one read after the 409, and
    ``paused`` whether the decision paused the target (that patch went out before the write).

    A resume made in between wins over the count: ``failures``, the window, ``pausedAt`` and
    the RolloutPaused condition are the resume's, and the evaluation's own results (verdict,
    metric results, Ready, Healthy, observedGeneration, rollout) the decision's. The count of an
    evaluation that read the status before the resume says nothing about the resumed rollout.

    Except when the decision paused: the Deployment was patched paused before this write, maybe
    after the person's release, and a status saying "resumed" over a paused target would hide
    the pause. The decided status then stands; if the person's release came after our patch,
    the next reconcile finds the target running and records the resume as a person's
    (docs/operator.md#never-auto-resume), so the resume is late by one interval, never lost.
    """
    if paused or not _resumed_meanwhile(read, fresh):
        return decided
    kept = {field: getattr(fresh, field) for field in RESUME_FIELDS}
    resumed = fresh.condition(ConditionType.ROLLOUT_PAUSED)
    assert resumed is not None  # _resumed_meanwhile found it
    return replace(decided, **kept).with_conditions(resumed)


def after_conflict(decision: Decision, *, read: AnalysisStatus, fresh: AnalysisStatus) -> Decision:
    """Return the decision as it stands after a 409 whose fresh copy is ``fresh``.

    Its status is ``reapplied``'s. When that keeps a person's resume, the resume's writer (the UI
    or the REST API, ``resume``) has already posted the RolloutResumed event and queued the
    Resumed message; a decision that saw the released target at the same moment and took it
    for a kubectl resume must not announce it a second time. Every other action stays.
    """
    paused = decision.pause is not None
    status = reapplied(decision.status, read=read, fresh=fresh, paused=paused)
    if paused or not _resumed_meanwhile(read, fresh):
        return replace(decision, status=status)
    return replace(
        decision,
        status=status,
        events=tuple(e for e in decision.events if e.reason != EventReason.ROLLOUT_RESUMED),
        notifications=tuple(
            i for i in decision.notifications if i.event != notify.NotifyEvent.RESUMED
        ),
    )


def _resumed_meanwhile(read: AnalysisStatus, fresh: AnalysisStatus) -> bool:
    """Whether ``fresh`` carries a person's resume that ``read`` did not."""
    after = fresh.condition(ConditionType.ROLLOUT_PAUSED)
    if (
        after is None
        or after.status != ConditionStatus.FALSE
        or after.reason != Reason.RESUMED_BY_USER
    ):
        return False
    # A second resume by the same person may leave the condition as it was (the status and the
    # message unchanged) but still resets the count to 0.
    before = read.condition(ConditionType.ROLLOUT_PAUSED)
    return after != before or (
        fresh.failures == 0
        and any(getattr(fresh, field) != getattr(read, field) for field in RESUME_FIELDS)
    )
