"""Adopt a pause recorded before ``paused-before`` existed (docs/operator.md#upgrading).

Versions before it wrote ``paused-by`` (and, for a StatefulSet or a DaemonSet, what the pause
changed) but not whether the target was already held. ``pause_record`` reads such a record as
untrusted: nothing of it would be restored, and a resume would need ``kubectl rollout resume``.
A platform team upgrading expects its pauses to stay releasable from the UI, so the operator
adopts one, once: when the record names this analysis, the analysis's own status says it paused
its target (``RolloutPaused=True``), and the record, completed with ``paused-before: "false"``
(what those versions assumed: they always paused and always unpaused), agrees with the target.
Anything else stays untrusted. Pure: the reconciler writes the patch and reports the Event.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sentinel_core.conditions import Annotation
from sentinel_core.pause_record import RecordState, annotations_of
from sentinel_core.workload_kinds import read_record


def adoption_patch(kind: str, workload: Mapping[str, Any], key: str) -> dict[str, Any] | None:
    """Return the merge patch adopting ``workload``'s pre-``paused-before`` record for ``key``.

    None when there is nothing to adopt: a record with ``paused-before``, none at all, one
    that does not name ``key`` (``namespace/name``), or one that would not be held once
    completed. The caller checks that the analysis's status claims the pause.
    """
    annotations = annotations_of(workload)
    before = Annotation.PAUSED_BEFORE.value
    if before in annotations or Annotation.PAUSED_BY.value not in annotations:
        return None
    meta = workload.get("metadata") or {}
    completed = {**workload, "metadata": {**meta, "annotations": {**annotations, before: "false"}}}
    record = read_record(kind, completed)
    if record.state != RecordState.HELD or key not in record.holders:
        return None
    return {
        "metadata": {
            "resourceVersion": meta.get("resourceVersion"),
            "annotations": {before: "false"},
        }
    }
