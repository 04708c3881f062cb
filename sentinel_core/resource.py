"""Read a RolloutAnalysis object (the API server's JSON) into typed parts, in one place.

The operator's reconciler, the mirror and the REST API all start from the same dict; they all
read it through ``AnalysisResource.read``, so the spec's defaults, the status's tolerance of
garbage and the metadata's rules are decided once (``parse_spec``, ``AnalysisStatus.from_dict``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sentinel_core.conditions import ConditionType
from sentinel_core.spec import AnalysisSpec, InvalidSpecError, SpecSummary, parse_spec
from sentinel_core.status import AnalysisStatus
from sentinel_core.values import non_negative_integer, parse_time


class MalformedResource(ValueError):
    """The object lacks the metadata every RolloutAnalysis has (namespace, name or uid)."""


@dataclass(frozen=True)
class AnalysisResource:
    """One RolloutAnalysis object as read: metadata, the parsed spec and the typed status."""

    namespace: str
    name: str
    uid: str
    resource_version: str
    generation: int
    created_at: datetime | None
    # The parsed spec, or why it could not be parsed (its ``summary`` has what could).
    spec: AnalysisSpec | InvalidSpecError
    status: AnalysisStatus
    # ``.spec`` and ``.status`` exactly as stored, for the mirror and round trips.
    raw_spec: dict[str, Any]
    raw_status: dict[str, Any]

    @classmethod
    def read(cls, obj: Mapping[str, Any]) -> AnalysisResource:
        """Return the parts of ``obj``; raise ``MalformedResource`` without namespace/name/uid."""
        metadata = _mapping(obj.get("metadata"))
        namespace, name, uid = (
            str(metadata.get(key) or "") for key in ("namespace", "name", "uid")
        )
        if not (namespace and name and uid):
            raise MalformedResource(
                f"RolloutAnalysis object lacks metadata.namespace, name or uid: {dict(metadata)!r}"
            )
        raw_spec = dict(_mapping(obj.get("spec")))
        raw_status = dict(_mapping(obj.get("status")))
        try:
            spec: AnalysisSpec | InvalidSpecError = parse_spec(raw_spec)
        except InvalidSpecError as exc:
            spec = exc
        return cls(
            namespace=namespace,
            name=name,
            uid=uid,
            resource_version=str(metadata.get("resourceVersion") or ""),
            generation=non_negative_integer(metadata.get("generation")) or 0,
            created_at=parse_time(metadata.get("creationTimestamp")),
            spec=spec,
            status=AnalysisStatus.from_dict(raw_status),
            raw_spec=raw_spec,
            raw_status=raw_status,
        )

    def answered(self, answer: Mapping[str, Any], status: AnalysisStatus) -> AnalysisResource:
        """Return this resource as the API server answered a write of ``status`` through /status.

        The answer differs from what was read only in its resourceVersion and its status, which
        is ``status``; so nothing is parsed again. Only when the status write met a 409 and the
        fresh copy it was re-applied to had moved on (a new ``generation``: the spec was edited)
        is the answer read whole.
        """
        metadata = _mapping(answer.get("metadata"))
        same = (
            str(metadata.get("uid") or "") == self.uid
            and non_negative_integer(metadata.get("generation")) == self.generation
        )
        if not same:
            return AnalysisResource.read(answer)
        return replace(
            self,
            resource_version=str(metadata.get("resourceVersion") or ""),
            status=status,
            raw_status=dict(_mapping(answer.get("status"))),
        )

    def reference(self) -> dict[str, Any]:
        """Return the object's identity as an API object has it (an Event's involvedObject)."""
        return {
            "metadata": {
                "namespace": self.namespace,
                "name": self.name,
                "uid": self.uid,
                "resourceVersion": self.resource_version,
            }
        }

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def valid_spec(self) -> AnalysisSpec | None:
        return self.spec if isinstance(self.spec, AnalysisSpec) else None

    @property
    def summary(self) -> SpecSummary:
        """The spec's columns, also when the spec is invalid."""
        return self.spec.summary

    @property
    def paused(self) -> bool:
        """Whether the status says this analysis paused its target."""
        return self.status.is_true(ConditionType.ROLLOUT_PAUSED)


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
