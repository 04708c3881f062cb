"""Seal the part of a status that can bring a pause, and discard it when the seal fails.

``status_check`` discards what the operator cannot have written; what it can have written
(``failures: 2`` beside a Fail, a sequential state whose counts add up) no check of the status
alone can tell from a forgery. So the operator seals what it writes with a key only it holds
(docs/status.md#what-the-operator-trusts-in-its-status), and reads back only what it sealed:

- the **evidence**: each sequential metric's state, with the analysis's uid and
  ``observedGeneration``. Unsealed, it is dropped: the evidence starts afresh from the rollout.
- the **count**: ``failures``, ``window``, ``lastVerdict``, ``lastEvaluationTime`` and each
  metric's verdict, with the same uid and generation. Unsealed, the count starts from 0. A count
  already at 0 is kept without a word: anyone may reset it (the web app's resume does, and keeps
  the seal it found, so the evidence part still verifies).

Conditions, ``pausedAt``, ``rollout`` and ``templates`` are not sealed: a pause is held by the
record on the target (``pause_record``), and the web app's resume writes the conditions.

The two parts are sealed apart, each an HMAC-SHA256 of a canonical JSON of the parsed model (a
number as the float it is, so the API server's ``1`` for ``1.0`` does not matter), cut to 128
bits. ``status.seal`` is ``v1:<evidence>:<count>``. Pure: the key is passed in.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import replace
from typing import Any

from sentinel_core.status import AnalysisStatus
from sentinel_core.status_check import Checked
from sentinel_core.values import format_time

_VERSION = "v1"
# Hex digits kept of each HMAC-SHA256: 128 bits.
_DIGITS = 32


def seal(status: AnalysisStatus, *, key: bytes, uid: str) -> str:
    """Return ``status.seal`` for ``status`` of the analysis ``uid``."""
    # Sealed as it will read back: the model's round trip is what the reader seals.
    status = AnalysisStatus.from_dict(status.to_dict())
    return ":".join((_VERSION, _mac(key, _evidence(status, uid)), _mac(key, _count(status, uid))))


def unseal(status: AnalysisStatus, sealed: object, *, key: bytes, uid: str) -> Checked:
    """Return ``status`` without the parts ``sealed`` does not verify, and what they were."""
    evidence_mac, count_mac = _parts(sealed)
    found: list[str] = []
    why = "no seal" if evidence_mac is None else "a seal the operator did not make"
    if not hmac.compare_digest(evidence_mac or "", _mac(key, _evidence(status, uid))):
        dropped = [r.name for r in status.metric_results if r.sequential is not None]
        if dropped:
            found.append(
                f"the sequential state of {', '.join(dropped)} has {why} (written by someone "
                "else, or before the operator sealed its status): the evidence starts afresh "
                "from the rollout"
            )
            status = replace(
                status,
                metric_results=tuple(replace(r, sequential=None) for r in status.metric_results),
            )
    if not hmac.compare_digest(count_mac or "", _mac(key, _count(status, uid))) and (
        status.failures or status.window
    ):
        window = (
            f" and window [{', '.join(str(v) for v in status.window)}]" if status.window else ""
        )
        found.append(
            f"failures {status.failures}{window} has {why} (written by someone else, or before "
            "the operator sealed its status): counted again from 0"
        )
        status = replace(status, failures=0, window=() if status.window is not None else None)
    return Checked(status, tuple(found))


def _parts(sealed: object) -> tuple[str | None, str | None]:
    if not isinstance(sealed, str):
        return None, None
    version, _, rest = sealed.partition(":")
    evidence, _, count = rest.partition(":")
    if version != _VERSION:
        return None, None
    return evidence, count


def _evidence(status: AnalysisStatus, uid: str) -> Any:
    return {
        "uid": uid,
        "observedGeneration": status.observed_generation,
        "sequential": [
            [r.name, r.sequential.to_dict()] for r in status.metric_results if r.sequential
        ],
    }


def _count(status: AnalysisStatus, uid: str) -> Any:
    moment = status.last_evaluation_time
    return {
        "uid": uid,
        "observedGeneration": status.observed_generation,
        "lastVerdict": None if status.last_verdict is None else str(status.last_verdict),
        "failures": status.failures,
        "window": None if status.window is None else [str(v) for v in status.window],
        "lastEvaluationTime": None if moment is None else format_time(moment),
        "verdicts": [[r.name, str(r.verdict)] for r in status.metric_results],
    }


def _mac(key: bytes, part: Any) -> str:
    text = json.dumps(_canonical(part), sort_keys=True, separators=(",", ":"))
    return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()[:_DIGITS]


def _canonical(value: Any) -> Any:
    """Return ``value`` with every number as the float's repr (1 and 1.0 seal alike)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return repr(float(value))
    if isinstance(value, dict):
        return {k: _canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    return str(value)
