"""The column descriptions of kube-apiserver's Tables for the built-in kinds devcluster serves.

Kubernetes takes them from its API types' Swagger docs (``SwaggerDoc()``, as used in
pkg/printers/internalversion/printers.go); tables.py puts them in ``columnDefinitions``.
Copied from the v1.37 server's answers; each constant names the field it documents.
"""

from __future__ import annotations

# ObjectMeta.name
NAME = (
    "Name must be unique within a namespace. Is required when creating resources, although "
    "some resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
# ObjectMeta.creationTimestamp
CREATION_TIMESTAMP = (
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created. It is not guaranteed to be set in happens-before order across separate "
    "operations. Clients may not set this value. It is represented in RFC3339 form and is in "
    "UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)
# ConfigMap.data
CONFIGMAP_DATA = (
    "Data contains the configuration data. Each key must consist of alphanumeric characters, "
    "'-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The "
    "keys stored in Data must not overlap with the keys in the BinaryData field, this is "
    "enforced during validation process."
)
# Secret.type
SECRET_TYPE = (
    "Used to facilitate programmatic handling of secret data. More info: "
    "https://kubernetes.io/docs/concepts/configuration/secret/#secret-types"
)
# Secret.data
SECRET_DATA = (
    "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' "
    "or '.'. The serialized form of the secret data is a base64 encoded string, representing "
    "the arbitrary (possibly non-string) data value here. Described in "
    "https://tools.ietf.org/html/rfc4648#section-4"
)
# DeploymentStatus.updatedReplicas
UPDATED_REPLICAS = (
    "Total number of non-terminating pods targeted by this deployment that have the desired "
    "template spec."
)
# DeploymentStatus.availableReplicas
AVAILABLE_REPLICAS = (
    "Total number of available non-terminating pods (ready for at least minReadySeconds) "
    "targeted by this deployment."
)
# DeploymentSpec.selector
DEPLOYMENT_SELECTOR = (
    "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the "
    "ones affected by this deployment. It must match the pod template's labels."
)
# DaemonSetStatus and its spec, for the DaemonSet table (pkg/printers/internalversion), as
# kube-apiserver v1.37 words them (the differential test compares them).
DESIRED_NUMBER_SCHEDULED = (
    "The total number of nodes that should be running the daemon pod (including nodes "
    "correctly running the daemon pod). More info: "
    "https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/"
)
CURRENT_NUMBER_SCHEDULED = (
    "The number of nodes that are running at least 1 daemon pod and are supposed to run the "
    "daemon pod. More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/"
)
NUMBER_READY = (
    "numberReady is the number of nodes that should be running the daemon pod and have one or "
    "more of the daemon pod running with a Ready Condition."
)
UPDATED_NUMBER_SCHEDULED = "The total number of nodes that are running updated daemon pod"
NUMBER_AVAILABLE = (
    "The number of nodes that should be running the daemon pod and have one or more of the "
    "daemon pod running and available (ready for at least spec.minReadySeconds)"
)
NODE_SELECTOR = (
    "NodeSelector is a selector which must be true for the pod to fit on a node. Selector which "
    "must match a node's labels for the pod to be scheduled on that node. More info: "
    "https://kubernetes.io/docs/concepts/configuration/assign-pod-node/"
)
DAEMON_SET_SELECTOR = (
    "A label query over pods that are managed by the daemon set. Must match in order to be "
    "controlled. It must match the pod template's labels. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"
)
# LeaseSpec.holderIdentity
HOLDER_IDENTITY = (
    "holderIdentity contains the identity of the holder of a current lease. If Coordinated "
    "Leader Election is used, the holder identity must be equal to the elected "
    "LeaseCandidate.metadata.name field."
)
# RoleBinding.roleRef
ROLE_BINDING_ROLE_REF = (
    "roleRef can reference a Role in the current namespace or a ClusterRole in the global "
    "namespace. If the RoleRef cannot be resolved, the Authorizer must return an error."
)
# ClusterRoleBinding.roleRef
CLUSTER_ROLE_BINDING_ROLE_REF = (
    "roleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot "
    "be resolved, the Authorizer must return an error."
)
# Event.lastTimestamp
EVENT_LAST_TIMESTAMP = "The time at which the most recent occurrence of this event was recorded."
# Event.type
EVENT_TYPE = "Type of this event (Normal, Warning), new types could be added in the future"
# Event.reason
EVENT_REASON = (
    "This should be a short, machine understandable string that gives the reason for the "
    "transition into the object's current status."
)
# Event.involvedObject
EVENT_INVOLVED_OBJECT = "The object that this event is about."
# ObjectReference.fieldPath
EVENT_FIELD_PATH = (
    "If referring to a piece of an object instead of an entire object, this string should "
    "contain a valid JSON/Go field access statement, such as "
    "desiredState.manifest.containers[2]. For example, if the object reference is to a "
    'container within a pod, this would take on a value like: "spec.containers{name}" (where '
    '"name" refers to the name of the container that triggered the event) or if no container '
    'name is specified "spec.containers[2]" (container with index 2 in this pod). This syntax '
    "is chosen only to have some well-defined way of referencing a part of an object."
)
# Event.source
EVENT_SOURCE = (
    "The component reporting this event. Should be a short machine understandable string."
)
# Event.message
EVENT_MESSAGE = "A human-readable description of the status of this operation."
# Event.firstTimestamp
EVENT_FIRST_TIMESTAMP = (
    "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)"
)
# Event.count
EVENT_COUNT = "The number of times this event has occurred."
