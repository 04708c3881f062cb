"""Turn a client's object into the object to store: schema pruning, defaulting and
validation, metadata checks, status-subresource separation and generation bumps.

handlers.py calls ``admit`` for every create, update and patch.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from devcluster import builtins
from devcluster import schema as schema_module
from devcluster.crd_validation import crd_causes
from devcluster.gofmt import go_json, go_quote
from devcluster.resources import ResourceType
from devcluster.status import ApiError, bad_request, invalid

_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
    "regex used for validation is "
    r"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_LABEL_MESSAGE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
# Metadata collections ObjectMeta serializes with omitempty.
_OMITTED_WHEN_EMPTY = ("labels", "annotations", "finalizers", "ownerReferences")
# Metadata fields a client may not set; the server owns them.
_SERVER_METADATA = ("uid", "creationTimestamp", "deletionTimestamp", "generation")


@dataclass(frozen=True)
class Cause:
    """A validation failure in the shape of schema.Cause."""

    reason: str
    field: str
    message: str


@dataclass(frozen=True)
class Admitted:
    """The object to store and the warnings for the response."""

    obj: dict[str, Any]
    warnings: tuple[str, ...]


def _quote(value: Any) -> str:
    return '"' + str(value).replace('"', '\\"') + '"'


def check_name(rtype: ResourceType, name: str) -> list[Cause]:
    """Return causes when ``name`` is not a valid object name for ``rtype``."""
    if not name:
        return [
            Cause(
                "FieldValueRequired",
                "metadata.name",
                "Required value: name or generateName is required",
            )
        ]
    if rtype.group == "rbac.authorization.k8s.io":
        # RBAC names are path segments ("system:controller:x" is fine).
        if name in (".", "..") or "/" in name or "%" in name:
            return [
                Cause(
                    "FieldValueInvalid",
                    "metadata.name",
                    f"Invalid value: {_quote(name)}: may not contain '/' or '%' and may not "
                    "be '.' or '..'",
                )
            ]
        return []
    label_only = rtype.plural in ("namespaces",)
    pattern, message = (_LABEL, _LABEL_MESSAGE) if label_only else (_SUBDOMAIN, _SUBDOMAIN_MESSAGE)
    limit = 63 if label_only else 253
    if len(name) > limit:
        return [
            Cause(
                "FieldValueInvalid",
                "metadata.name",
                f"Invalid value: {_quote(name)}: must be no more than {limit} characters",
            )
        ]
    if not pattern.match(name):
        return [
            Cause("FieldValueInvalid", "metadata.name", f"Invalid value: {_quote(name)}: {message}")
        ]
    return []


_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_LABEL_VALUE_MESSAGE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
_NAME_PART_MESSAGE = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


def _key_causes(field: str, key: str) -> list[Cause]:
    prefix, _, name = key.rpartition("/")
    if (prefix and (len(prefix) > 253 or not _SUBDOMAIN.match(prefix))) or not (
        0 < len(name) <= 63 and _LABEL_VALUE.match(name)
    ):
        return [
            Cause(
                "FieldValueInvalid", field, f"Invalid value: {_quote(key)}: " + _NAME_PART_MESSAGE
            )
        ]
    return []


def _check_labels(metadata: Mapping[str, Any]) -> list[Cause]:
    causes = []
    for field in ("labels", "annotations"):
        value = metadata.get(field)
        if value is None:
            continue
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            causes.append(
                Cause(
                    "FieldValueTypeInvalid",
                    f"metadata.{field}",
                    "Invalid value: must be a map of strings",
                )
            )
            continue
        for key, item in value.items():
            causes += _key_causes(f"metadata.{field}", key)
            if field == "labels" and (len(item) > 63 or not _LABEL_VALUE.match(item)):
                causes.append(
                    Cause(
                        "FieldValueInvalid",
                        "metadata.labels",
                        f"Invalid value: {_quote(item)}: {_LABEL_VALUE_MESSAGE}",
                    )
                )
    return causes


# The apps/v1 kinds whose selector must match their pod template and which need a container.
_WORKLOADS = ("Deployment", "StatefulSet", "DaemonSet")


def _tracks_generation(rtype: ResourceType) -> bool:
    # Only kinds whose registry strategy maintains metadata.generation get one.
    return rtype.custom or rtype.kind in (
        "Deployment",
        "StatefulSet",
        "DaemonSet",
        "CustomResourceDefinition",
    )


def _spec_part(rtype: ResourceType, obj: Mapping[str, Any]) -> dict[str, Any]:
    # Without a status subresource, status is part of what generation tracks.
    ignored = ("metadata", "status") if "status" in rtype.subresources else ("metadata",)
    return {key: value for key, value in obj.items() if key not in ignored}


def _strict_error(rtype: ResourceType, unknown: list[str], patch: bytes | None) -> ApiError:
    fields = ", ".join(f"unknown field {_quote(path)}" for path in unknown)
    if patch is None:
        # A body that does not decode strictly: 400, like the API server's decoder.
        return bad_request(
            f'{rtype.kind} in version "{rtype.version}" cannot be handled as a {rtype.kind}: '
            f"strict decoding error: {fields}"
        )
    # A patch whose result does not decode strictly: 422 on the field "patch".
    value = json.dumps(patch.decode("utf-8", errors="replace"))
    return invalid(
        "",
        "",
        "",
        [
            Cause(
                "FieldValueInvalid",
                "patch",
                f"Invalid value: {value}: strict decoding error: {fields}",
            )
        ],
    )


def _schema_pass(
    rtype: ResourceType, obj: dict[str, Any], field_validation: str, patch: bytes | None
) -> tuple[dict[str, Any], list[str]]:
    if rtype.schema is None:
        return obj, []
    pruned, unknown = schema_module.prune(rtype.schema, obj)
    warnings: list[str] = []
    if unknown:
        if field_validation == "Strict":
            raise _strict_error(rtype, unknown, patch)
        if field_validation != "Ignore":
            warnings = [f"unknown field {_quote(path)}" for path in unknown]
    return schema_module.apply_defaults(rtype.schema, pruned), warnings


def admit(
    rtype: ResourceType,
    new: dict[str, Any],
    old: dict[str, Any] | None,
    *,
    subresource: str = "",
    field_validation: str = "Warn",
    patch: bytes | None = None,
) -> Admitted:
    """Return the object to store for a create (old None) or an update of ``old``.

    ``patch`` is the raw PATCH body when ``new`` is the result of applying it.
    """
    if not isinstance(new, dict):
        raise bad_request("the body of the request was in an unknown format")
    _check_type(rtype, new)
    new = copy.deepcopy(new)
    new["apiVersion"], new["kind"] = rtype.group_version, rtype.kind
    metadata = new.setdefault("metadata", {})
    if not isinstance(metadata, dict):
        raise bad_request("metadata must be an object")
    if subresource == "status" and old is not None:
        new = {**copy.deepcopy(old), "status": new.get("status")}
        if new["status"] is None:
            new.pop("status")
    elif "status" in rtype.subresources:
        if old is not None and "status" in old:
            new["status"] = copy.deepcopy(old["status"])
        else:
            new.pop("status", None)
    new, warnings = _schema_pass(rtype, new, field_validation, patch)
    metadata = new["metadata"]
    if old is not None:
        for key in _SERVER_METADATA:
            if key in old["metadata"]:
                metadata[key] = old["metadata"][key]
            else:
                metadata.pop(key, None)
        for key in ("name", "namespace"):
            # A cluster-scoped object has no namespace at all, not an empty one.
            if key in old["metadata"]:
                metadata[key] = old["metadata"][key]
            else:
                metadata.pop(key, None)
        if _tracks_generation(rtype) and _spec_part(rtype, new) != _spec_part(rtype, old):
            metadata["generation"] = int(old["metadata"].get("generation", 1)) + 1
    else:
        for key in _SERVER_METADATA:
            metadata.pop(key, None)
        if _tracks_generation(rtype):
            metadata["generation"] = 1
    for key in _OMITTED_WHEN_EMPTY:
        # ObjectMeta's omitempty: the real server stores no empty labels, annotations, ...
        if key in metadata and not metadata[key]:
            del metadata[key]
    causes = check_name(rtype, metadata.get("name", "")) if old is None else []
    causes += _check_labels(metadata)
    if rtype.schema is not None and subresource == "status" and rtype.custom:
        causes += _status_causes(rtype.schema, new)
    elif rtype.schema is not None:
        causes += list(schema_module.validate(rtype.schema, new))
    if old is not None:
        causes += _new_finalizer_causes(metadata, old["metadata"], twice=rtype.custom)
    if old is not None and rtype.kind in ("RoleBinding", "ClusterRoleBinding"):
        causes += _role_ref_causes(new, old)
    if rtype.group == "apps" and rtype.kind in _WORKLOADS and subresource != "status":
        causes += [Cause(*problem) for problem in builtins.deployment_problems(new)]
    if rtype.kind == "CustomResourceDefinition":
        causes += crd_causes(new)
    if causes:
        raise invalid(rtype.kind, rtype.group, metadata.get("name", ""), causes)
    return Admitted(new, tuple(warnings))


def _status_causes(schema: Mapping[str, Any], new: Mapping[str, Any]) -> list[Any]:
    """Validate a status write as apiextensions-apiserver does: the status alone, against
    the status schema, so the message says "failures in body" while the field is
    "status.failures"."""
    status_schema = (schema.get("properties") or {}).get("status")
    if status_schema is None or "status" not in new:
        return []
    causes = [
        dataclasses.replace(cause, field=f"status.{cause.field}" if cause.field else "status")
        for cause in schema_module.validate_value(status_schema, new["status"], "")
    ]
    return schema_module.with_cel_note(schema, causes)


def _new_finalizer_causes(
    meta: Mapping[str, Any], old_meta: Mapping[str, Any], *, twice: bool
) -> list[Cause]:
    """An object being deleted takes no new finalizers.

    apiextensions-apiserver checks a custom resource's metadata twice on an update (its
    strategy, then its validator), so there the one cause is reported ``twice``.
    """
    if not old_meta.get("deletionTimestamp"):
        return []
    added = sorted(set(meta.get("finalizers") or ()) - set(old_meta.get("finalizers") or ()))
    if not added:
        return []
    shown = "[]string{" + ", ".join(go_quote(name) for name in added) + "}"
    message = (
        "Forbidden: no new finalizers can be added if the object is being deleted, "
        f"found new finalizers {shown}"
    )
    return [Cause("FieldValueForbidden", "metadata.finalizers", message)] * (2 if twice else 1)


def _role_ref_causes(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    """A binding's roleRef cannot change (pkg/apis/rbac/validation)."""
    ref, before = new.get("roleRef") or {}, old.get("roleRef") or {}
    keys = ("apiGroup", "kind", "name")
    if all(ref.get(key) == before.get(key) for key in keys):
        return []
    # The internal rbac.RoleRef, JSON-encoded with its Go field names in declaration order.
    shown = ",".join(
        f"{go_json(go_name)}:{go_json(ref.get(key, ''))}"
        for go_name, key in zip(("APIGroup", "Kind", "Name"), keys, strict=True)
    )
    return [
        Cause("FieldValueInvalid", "roleRef", f"Invalid value: {{{shown}}}: field is immutable")
    ]


def _check_type(rtype: ResourceType, new: Mapping[str, Any]) -> None:
    api_version, kind = new.get("apiVersion"), new.get("kind")
    if kind and kind != rtype.kind and kind not in ("Scale", "TokenRequest"):
        raise bad_request(
            f"the API version in the data ({api_version}) does not match the expected API "
            f"version ({rtype.group_version})"
            if api_version and api_version != rtype.group_version
            else f"Object kind {kind} does not match the expected kind {rtype.kind}"
        )
    if api_version and api_version != rtype.group_version:
        raise bad_request(
            f"the API version in the data ({api_version}) does not match the expected API "
            f"version ({rtype.group_version})"
        )
