"""Behaviour of built-in kinds that a real cluster gets from controllers and strategies:
Deployment, StatefulSet and DaemonSet defaults and simulated statuses, the Scale
subresource, CRD status conditions, and the core/v1 <-> events.k8s.io/v1 Event conversion.

Called by handlers.py around writes and reads.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
from collections.abc import Mapping
from typing import Any

from devcluster.gofmt import go_json

_EVENT_FIELDS = (
    # (core/v1 field, events.k8s.io/v1 field)
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
    ("reportingComponent", "reportingController"),
)


def default_deployment(obj: dict[str, Any]) -> None:
    """Fill the defaults the apps/v1 Deployment strategy applies."""
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    strategy = spec.setdefault("strategy", {"type": "RollingUpdate"})
    if strategy.get("type", "RollingUpdate") == "RollingUpdate":
        strategy.setdefault("type", "RollingUpdate")
        rolling = strategy.setdefault("rollingUpdate", {})
        rolling.setdefault("maxUnavailable", "25%")
        rolling.setdefault("maxSurge", "25%")
    _default_pod_template(spec)


def default_stateful_set(obj: dict[str, Any]) -> None:
    """Fill the defaults apps/v1 gives a StatefulSet (pkg/apis/apps/v1/defaults.go)."""
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    spec.setdefault(
        "persistentVolumeClaimRetentionPolicy", {"whenDeleted": "Retain", "whenScaled": "Retain"}
    )
    strategy = spec.setdefault("updateStrategy", {"type": "RollingUpdate"})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = strategy.setdefault("rollingUpdate", {})
        rolling.setdefault("partition", 0)
        # MaxUnavailableStatefulSet is on by default in 1.37.
        rolling.setdefault("maxUnavailable", 1)
    _default_pod_template(spec)


# The DaemonSet strategy's count of pod template changes, shown to apps/v1 as an annotation.
_TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"


def default_daemon_set(obj: dict[str, Any], old: Mapping[str, Any] | None = None) -> None:
    """Fill the defaults apps/v1 gives a DaemonSet (pkg/apis/apps/v1/defaults.go).

    And count its template's changes as the registry strategy does: 1 when created, one more
    each time an update changes ``spec.template``.
    """
    spec = obj.setdefault("spec", {})
    spec.setdefault("revisionHistoryLimit", 10)
    strategy = spec.setdefault("updateStrategy", {"type": "RollingUpdate"})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = strategy.setdefault("rollingUpdate", {})
        rolling.setdefault("maxUnavailable", 1)
        rolling.setdefault("maxSurge", 0)
    _default_pod_template(spec)
    # Compared once both templates carry their defaults: an apply that changes nothing in the
    # template does not count.
    before = ((old or {}).get("metadata") or {}).get("annotations") or {}
    counted = str(before.get(_TEMPLATE_GENERATION, ""))
    generation = int(counted) if old is not None and counted.isdigit() else 0
    if old is None or (old.get("spec") or {}).get("template") != spec.get("template"):
        generation += 1
    obj["metadata"].setdefault("annotations", {})[_TEMPLATE_GENERATION] = str(generation)


# Kubernetes' rand.SafeEncodeString alphabet: revision names look like the controllers' own.
_SAFE = "bcdfghjklmnpqrstvwxz2456789"
# devcluster plays one node, which every DaemonSet's pod fits, as the differential's real
# cluster has one kwok node (docs/devcluster.md).
_NODES = 1


def _revision_hash(template: object) -> str:
    """Return a stable ``controller-revision-hash`` of a pod template (devcluster's own)."""
    text = json.dumps(template, sort_keys=True, separators=(",", ":"))
    return "".join(_SAFE[byte % len(_SAFE)] for byte in hashlib.sha256(text.encode()).digest()[:10])


def _template_changed(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> bool:
    return old is None or (old.get("spec") or {}).get("template") != (obj.get("spec") or {}).get(
        "template"
    )


def simulate_stateful_set_status(obj: dict[str, Any], old: Mapping[str, Any] | None) -> None:
    """Play the StatefulSet controller as it writes its status once the pods it wants run.

    No pods exist here, so each update completes at once as far as the strategy lets it: a
    ``RollingUpdate`` brings the ordinals at and above its ``partition`` to the update revision
    (and those already there stay), ``OnDelete`` replaces no pod. A new template is a new
    ``updateRevision`` named ``<name>-<hash>``; once every pod has it, it is the
    ``currentRevision`` too. A status written through ``/status`` is taken as the pods' state.
    """
    spec = obj.get("spec") or {}
    replicas = int(spec.get("replicas", 1))
    before = (old or {}).get("status") or {}
    update, current = before.get("updateRevision"), before.get("currentRevision")
    updated = int(before.get("updatedReplicas") or 0)
    if _template_changed(obj, old) or not update:
        revision = f"{obj['metadata']['name']}-{_revision_hash(spec.get('template'))}"
        updated = updated if revision == update else 0
        update, current = revision, current or revision
    strategy = spec.get("updateStrategy") or {}
    if strategy.get("type", "RollingUpdate") == "RollingUpdate":
        partition = int((strategy.get("rollingUpdate") or {}).get("partition") or 0)
        updated = max(updated, replicas - partition)
    if update == current or updated >= replicas:
        current, updated = update, replicas
    status: dict[str, Any] = {
        "observedGeneration": obj["metadata"].get("generation", 1),
        "replicas": replicas,
        "readyReplicas": replicas,
        "currentReplicas": replicas - updated if current != update else replicas,
        "updatedReplicas": updated,
        "currentRevision": current,
        "updateRevision": update,
        "collisionCount": 0,
        "availableReplicas": replicas,
    }
    # Zero counts are omitempty in apps/v1 (replicas and availableReplicas are not).
    for key in ("readyReplicas", "currentReplicas", "updatedReplicas"):
        if not status[key]:
            del status[key]
    obj["status"] = status


def simulate_daemon_set_status(obj: dict[str, Any], old: Mapping[str, Any] | None) -> None:
    """Play the DaemonSet controller as it writes its status once its pod runs on each node.

    devcluster plays one node. A ``RollingUpdate`` brings it to the latest template at once;
    ``OnDelete`` replaces no pod, so a new template leaves none updated until one is deleted
    (which no pod here ever is). A status written through ``/status`` is taken as the pods'.
    """
    spec = obj.get("spec") or {}
    before = (old or {}).get("status") or {}
    on_delete = (spec.get("updateStrategy") or {}).get("type") == "OnDelete"
    updated = _NODES
    if old is not None and on_delete:
        kept = min(int(before.get("updatedNumberScheduled") or 0), _NODES)
        updated = 0 if _template_changed(obj, old) else kept
    status: dict[str, Any] = {
        "currentNumberScheduled": _NODES,
        "numberMisscheduled": 0,
        "desiredNumberScheduled": _NODES,
        "numberReady": _NODES,
        "observedGeneration": obj["metadata"].get("generation", 1),
        "updatedNumberScheduled": updated,
        "numberAvailable": _NODES,
    }
    if not updated:
        del status["updatedNumberScheduled"]
    obj["status"] = status


def _default_pod_template(spec: dict[str, Any]) -> None:
    template_spec = spec.setdefault("template", {}).setdefault("spec", {})
    template_spec.setdefault("restartPolicy", "Always")
    template_spec.setdefault("terminationGracePeriodSeconds", 30)
    template_spec.setdefault("dnsPolicy", "ClusterFirst")
    template_spec.setdefault("schedulerName", "default-scheduler")
    template_spec.setdefault("securityContext", {})
    for container in template_spec.get("containers") or []:
        if isinstance(container, dict):
            image = str(container.get("image", ""))
            latest = ":" not in image.rsplit("/", 1)[-1] or image.endswith(":latest")
            container.setdefault("imagePullPolicy", "Always" if latest else "IfNotPresent")
            container.setdefault("terminationMessagePath", "/dev/termination-log")
            container.setdefault("terminationMessagePolicy", "File")
            container.setdefault("resources", {})


def simulate_deployment_status(obj: dict[str, Any], now: str) -> None:
    """Play the Deployment controller: complete the rollout at once unless paused.

    No pods exist here. A paused Deployment keeps the replica counts of its current
    status (so a half-done rollout written through /status stays half done).
    """
    spec = obj.get("spec") or {}
    replicas = int(spec.get("replicas", 1))
    metadata = obj["metadata"]
    annotations = metadata.setdefault("annotations", {})
    annotations.setdefault("deployment.kubernetes.io/revision", "1")
    old_conditions = {c.get("type"): c for c in (obj.get("status") or {}).get("conditions") or []}
    paused = bool(spec.get("paused"))

    def condition(kind: str, status: str, reason: str, message: str) -> dict[str, Any]:
        previous = old_conditions.get(kind) or {}
        same = previous.get("status") == status and previous.get("reason") == reason
        return {
            "type": kind,
            "status": status,
            "reason": reason,
            "message": message,
            "lastUpdateTime": previous.get("lastUpdateTime", now) if same else now,
            "lastTransitionTime": previous.get("lastTransitionTime", now) if same else now,
        }

    name = metadata["name"]
    progressing = (
        condition("Progressing", "Unknown", "DeploymentPaused", "Deployment is paused")
        if paused
        else condition(
            "Progressing",
            "True",
            "NewReplicaSetAvailable",
            f'ReplicaSet "{name}-1" has successfully progressed.',
        )
    )
    status: dict[str, Any] = {
        "observedGeneration": metadata.get("generation", 1),
        "replicas": replicas,
        "updatedReplicas": replicas,
        "readyReplicas": replicas,
        "availableReplicas": replicas,
        "conditions": [
            condition(
                "Available",
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.",
            ),
            progressing,
        ],
    }
    counts = ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas")
    previous_status = obj.get("status") or {}
    if paused and previous_status:
        # A paused rollout makes no progress: keep the replica counts it had.
        for key in counts:
            if key in previous_status:
                status[key] = previous_status[key]
            else:
                status.pop(key)
    elif replicas == 0:
        for key in counts:
            status.pop(key)
    obj["status"] = status


def fold_string_data(secret: dict[str, Any]) -> None:
    """Merge Secret.stringData into data (base64) and drop it, as the API server does."""
    string_data = secret.pop("stringData", None)
    if isinstance(string_data, dict):
        data = secret.setdefault("data", {}) or {}
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        secret["data"] = data
    secret.setdefault("type", "Opaque")


def deployment_problems(deployment: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """Return (reason, field, message) for what apps/v1 validation rejects beyond the schema."""
    spec = deployment.get("spec") or {}
    selector = spec.get("selector")
    if not selector:
        return [("FieldValueRequired", "spec.selector", "Required value")]
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    wanted = selector.get("matchLabels") or {}
    if any(labels.get(key) != value for key, value in wanted.items()):
        return [
            (
                "FieldValueInvalid",
                "spec.template.metadata.labels",
                f"Invalid value: {go_json(labels)}: `selector` does not match template `labels`",
            )
        ]
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers")
    if not containers:
        return [("FieldValueRequired", "spec.template.spec.containers", "Required value")]
    return []


def selector_string(selector: Mapping[str, Any] | None) -> str:
    """Render a LabelSelector the way Scale.status.selector shows it."""
    if not selector:
        return ""
    parts = [f"{key}={value}" for key, value in sorted((selector.get("matchLabels") or {}).items())]
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression.get("key", ""), expression.get("operator", "")
        values = ",".join(expression.get("values") or [])
        if operator == "In":
            parts.append(f"{key} in ({values})")
        elif operator == "NotIn":
            parts.append(f"{key} notin ({values})")
        elif operator == "Exists":
            parts.append(key)
        elif operator == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts)


def scale_of(deployment: Mapping[str, Any]) -> dict[str, Any]:
    """Return the autoscaling/v1 Scale view of a Deployment."""
    metadata = deployment["metadata"]
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            key: metadata[key]
            for key in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if key in metadata
        },
        "spec": {"replicas": (deployment.get("spec") or {}).get("replicas", 1)},
        "status": {
            "replicas": (deployment.get("status") or {}).get("replicas", 0),
            "selector": selector_string((deployment.get("spec") or {}).get("selector")),
        },
    }


def default_crd(crd: dict[str, Any]) -> None:
    """Apply apiextensions/v1 defaulting: a CRD without conversion converts with None."""
    spec = crd.get("spec")
    if isinstance(spec, dict) and not spec.get("conversion"):
        spec["conversion"] = {"strategy": "None"}


def crd_status(crd: dict[str, Any], now: str) -> None:
    """Mark a CRD Established and NamesAccepted, as the apiextensions controllers do."""
    spec = crd.get("spec") or {}
    status = crd.setdefault("status", {})
    previous = {c.get("type"): c for c in status.get("conditions") or []}

    def condition(kind: str, reason: str, message: str) -> dict[str, Any]:
        return {
            "type": kind,
            "status": "True",
            "reason": reason,
            "message": message,
            "lastTransitionTime": (previous.get(kind) or {}).get("lastTransitionTime", now),
        }

    status["conditions"] = [
        condition("NamesAccepted", "NoConflicts", "no conflicts found"),
        condition("Established", "InitialNamesAccepted", "the initial names have been accepted"),
    ]
    names = dict(spec.get("names") or {})
    names.setdefault("singular", str(names.get("kind", "")).lower())
    names.setdefault("listKind", f"{names.get('kind', '')}List")
    status["acceptedNames"] = names
    stored = list(status.get("storedVersions") or [])
    for version in spec.get("versions") or []:
        if version.get("storage") and version.get("name") not in stored:
            stored.append(version.get("name"))
    status["storedVersions"] = stored


def convert_event(obj: Mapping[str, Any], to_group: str) -> dict[str, Any]:
    """Return an Event in the shape of core/v1 (to_group "") or events.k8s.io/v1."""
    event = copy.deepcopy(dict(obj))
    source_is_core = event.get("apiVersion", "v1") == "v1"
    if source_is_core == (to_group == ""):
        return event
    for core_field, new_field in _EVENT_FIELDS:
        old_name, new_name = (core_field, new_field) if to_group else (new_field, core_field)
        if old_name in event:
            event[new_name] = event.pop(old_name)
    event["apiVersion"] = "events.k8s.io/v1" if to_group else "v1"
    return event
