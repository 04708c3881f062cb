"""OpenAPI v3 discovery documents for kubectl: the ``/openapi/v3`` index and one document
per group-version, shaped like kube-apiserver's.

server.py answers ``GET /openapi/v3`` with ``openapi_v3_index`` and
``GET /openapi/v3/api/v1`` / ``/openapi/v3/apis/{group}/{version}`` with
``openapi_v3_document``. kubectl reads them in three places:

- ``kubectl explain`` (k8s.io/kubectl/pkg/explain/v2) finds the resource's GVK in the
  ``x-kubernetes-group-version-kind`` of an operation under its collection or item path,
  then the component schema carrying the same GVK, and prints descriptions from it.
- ``kubectl apply/create/replace --validate=strict`` (the default) asks
  resource.QueryParamVerifierV3 whether the PATCH operation of the GVK lists a
  ``fieldValidation`` parameter; if it does, validation is left to the server and kubectl
  never falls back to client-side validation against /openapi/v2.
- ``kubectl apply`` computes strategic merge patches from these schemas when the PATCH
  operation accepts ``application/strategic-merge-patch+json`` (built-in kinds only), using
  the ``x-kubernetes-patch-*`` extensions; for custom resources it asks /openapi/v2 once,
  and a 404 there makes it fall back to a JSON merge patch, as with any CRD.

So /openapi/v2 is not needed: ``openapi_v2_document`` returns None (the server answers 404).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from devcluster import builtin_schemas

if TYPE_CHECKING:
    from devcluster.resources import ResourceType

_REF = "#/components/schemas/"
_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_LIST_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"
_API_VERSION_DOC = (
    "APIVersion defines the versioned schema of this representation of an object. Servers "
    "should convert recognized schemas to the latest internal value, and may reject "
    "unrecognized values. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"
)
_KIND_DOC = (
    "Kind is a string value representing the REST resource this object represents. Servers "
    "may infer this from the endpoint the client submits requests to. Cannot be updated. In "
    "CamelCase. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
)
_METADATA_DOC = (
    "Standard object's metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)
_JSON_TYPES = ("application/json", "application/yaml", "application/vnd.kubernetes.protobuf")
_PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
)
_SMP = "application/strategic-merge-patch+json"
_PARAMETERS: dict[str, tuple[str, str]] = {
    # name -> (type, description); every one of them is a query parameter.
    "dryRun": ("string", "When present, indicates that modifications should not be persisted. "
               "An invalid or unrecognized dryRun directive will result in an error response "
               "and no further processing of the request. Valid values are: - All: all dry "
               "run stages will be processed"),
    "fieldManager": ("string", "fieldManager is a name associated with the actor or entity "
                     "that is making these changes."),
    "fieldValidation": ("string", "fieldValidation instructs the server on how to handle "
                        "objects in the request (POST/PUT/PATCH) containing unknown or "
                        "duplicate fields. Valid values are: - Ignore - Warn - Strict"),
    "force": ("boolean", "Force is going to \"force\" Apply requests. It means user will "
              "re-acquire conflicting fields owned by other people."),
    "gracePeriodSeconds": ("integer", "The duration in seconds before the object should be "
                           "deleted."),
    "propagationPolicy": ("string", "Whether and how garbage collection will be performed. "
                          "Acceptable values are: 'Orphan', 'Background', 'Foreground'."),
    "allowWatchBookmarks": ("boolean", "allowWatchBookmarks requests watch events with type "
                            "\"BOOKMARK\"."),
    "continue": ("string", "The continue option should be set when retrieving more results "
                 "from the server."),
    "fieldSelector": ("string", "A selector to restrict the list of returned objects by their "
                      "fields. Defaults to everything."),
    "labelSelector": ("string", "A selector to restrict the list of returned objects by their "
                      "labels. Defaults to everything."),
    "limit": ("integer", "limit is a maximum number of responses to return for a list call."),
    "resourceVersion": ("string", "resourceVersion sets a constraint on what resource "
                        "versions a request may be served from."),
    "resourceVersionMatch": ("string", "resourceVersionMatch determines how resourceVersion "
                             "is applied to list calls."),
    "timeoutSeconds": ("integer", "Timeout for the list/watch call."),
    "watch": ("boolean", "Watch for changes to the described resources and return them as a "
              "stream of add, update, and remove notifications."),
    "pretty": ("string", "If 'true', then the output is pretty printed."),
}  # fmt: skip
_LIST_PARAMS = (
    "allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit",
    "resourceVersion", "resourceVersionMatch", "timeoutSeconds", "watch",
)  # fmt: skip
_WRITE_PARAMS = ("dryRun", "fieldManager", "fieldValidation")
_DELETE_PARAMS = ("dryRun", "gracePeriodSeconds", "propagationPolicy")
# Subresources whose request and response are another kind.
_SUBRESOURCE_KINDS = {
    "scale": ("autoscaling", "v1", "Scale"),
    "token": ("authentication.k8s.io", "v1", "TokenRequest"),
}


def openapi_v3_index(types: Iterable[ResourceType]) -> dict[str, Any]:
    """Return the body of GET /openapi/v3: one serverRelativeURL (with hash) per group-version."""
    by_gv: dict[tuple[str, str], list[ResourceType]] = {}
    for rtype in types:
        by_gv.setdefault((rtype.group, rtype.version), []).append(rtype)
    paths: dict[str, Any] = {}
    for (group, version), members in by_gv.items():
        key = _gv_path(group, version).lstrip("/")
        digest = _cached(group, version, members)[1]
        paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={digest}"}
    return {"paths": paths}


def openapi_v3_hash(document: Mapping[str, Any]) -> str:
    """Return the hash kube-apiserver puts in serverRelativeURL: upper-case hex SHA-512."""
    return hashlib.sha512(_canonical(document).encode()).hexdigest().upper()


def openapi_v2_document(types: Iterable[ResourceType]) -> dict[str, Any] | None:
    """Return None: kubectl needs no /openapi/v2 from devcluster (see the module docstring)."""
    del types
    return None


def openapi_v3_document(group: str, version: str, types: Sequence[ResourceType]) -> dict[str, Any]:
    """Return the OpenAPI v3 document of one group-version (paths and components)."""
    return json.loads(_cached(group, version, types)[0])


def _cached(group: str, version: str, types: Sequence[ResourceType]) -> tuple[str, str]:
    """Return (document JSON, hash), built once per distinct set of types."""
    # ResourceType holds dicts, so it cannot key a functools cache; its fingerprint can.
    key = json.dumps([group, version, [_fingerprint(t) for t in types]], default=str)
    found = _documents.get(key)
    if found is None:
        document = _build_document(group, version, types)
        found = (json.dumps(document), openapi_v3_hash(document))
        if len(_documents) >= _MAX_CACHED:
            _documents.clear()
        _documents[key] = found
    return found


_documents: dict[str, tuple[str, str]] = {}
_MAX_CACHED = 64


def _build_document(group: str, version: str, types: Sequence[ResourceType]) -> dict[str, Any]:
    schemas: dict[str, Any] = {}
    paths: dict[str, Any] = {}
    for rtype in types:
        component = _add_kind_schemas(rtype, schemas)
        paths.update(_resource_paths(rtype, component, schemas))
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "unversioned"},
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "BearerToken": {
                    "type": "apiKey",
                    "description": "Bearer Token authentication",
                    "name": "authorization",
                    "in": "header",
                }
            },
        },
        "security": [{"BearerToken": []}],
    }


def _fingerprint(rtype: ResourceType) -> list[Any]:
    custom = _is_custom(rtype)
    return [
        rtype.group, rtype.version, rtype.kind, rtype.plural, rtype.namespaced,
        sorted(rtype.subresources), list(rtype.verbs), custom,
        rtype.schema if custom else None,
    ]  # fmt: skip


def _canonical(document: Mapping[str, Any]) -> str:
    return json.dumps(document, sort_keys=True, separators=(",", ":"))


def _is_custom(rtype: ResourceType) -> bool:
    custom = getattr(rtype, "custom", None)
    if custom is not None:
        return bool(custom)
    return builtin_schemas.model_for(rtype.group, rtype.version, rtype.kind) is None


def _gvk(group: str, version: str, kind: str) -> dict[str, str]:
    return {"group": group, "kind": kind, "version": version}


def _gv_path(group: str, version: str) -> str:
    return f"/apis/{group}/{version}" if group else f"/api/{version}"


def custom_component_name(group: str, version: str, kind: str) -> str:
    """Return the component name of a custom kind: com.example.sentinel.v1alpha1.Kind."""
    return ".".join([*reversed(group.split(".")), version, kind])


def _add_kind_schemas(rtype: ResourceType, schemas: dict[str, Any]) -> str:
    """Add the kind's component (and the ones it refers to) to ``schemas``; return its name."""
    group, version, kind = rtype.group, rtype.version, rtype.kind
    if not _is_custom(rtype):
        found = builtin_schemas.definitions_for(group, version, kind)
        if found is not None:
            root, definitions = found
            schemas.update(definitions)
            _add_list_schema(root, group, version, kind, schemas)
            return root
    name = custom_component_name(group, version, kind)
    schemas[name] = _custom_schema(rtype)
    schemas.update(builtin_schemas.model_definitions("V1ObjectMeta"))
    _add_list_schema(name, group, version, kind, schemas)
    return name


def _custom_schema(rtype: ResourceType) -> dict[str, Any]:
    schema = json.loads(json.dumps(rtype.schema or {"type": "object"}))
    schema.setdefault("type", "object")
    properties = schema.setdefault("properties", {})
    properties["apiVersion"] = {
        "type": "string",
        "description": _API_VERSION_DOC,
        **_without_type(properties.get("apiVersion")),
    }
    properties["kind"] = {
        "type": "string",
        "description": _KIND_DOC,
        **_without_type(properties.get("kind")),
    }
    properties["metadata"] = {
        "allOf": [{"$ref": _REF + _OBJECT_META}],
        "description": _METADATA_DOC,
    }
    schema["x-kubernetes-group-version-kind"] = [_gvk(rtype.group, rtype.version, rtype.kind)]
    return schema


def _without_type(prop: Any) -> dict[str, Any]:
    if not isinstance(prop, Mapping):
        return {}
    return {k: v for k, v in prop.items() if k not in ("type", "properties")}


def _add_list_schema(
    item: str, group: str, version: str, kind: str, schemas: dict[str, Any]
) -> None:
    schemas.update(builtin_schemas.model_definitions("V1ListMeta"))
    schemas[f"{item}List"] = {
        "type": "object",
        "description": f"{kind}List is a list of {kind}.",
        "required": ["items"],
        "properties": {
            "apiVersion": {"type": "string", "description": _API_VERSION_DOC},
            "items": {
                "type": "array",
                "description": f"List of {kind.lower()}s.",
                "items": {"allOf": [{"$ref": _REF + item}]},
            },
            "kind": {"type": "string", "description": _KIND_DOC},
            "metadata": {"allOf": [{"$ref": _REF + _LIST_META}], "description": _METADATA_DOC},
        },
        "x-kubernetes-group-version-kind": [_gvk(group, version, f"{kind}List")],
    }


# --- paths ------------------------------------------------------------------------------------


def _resource_paths(rtype: ResourceType, component: str, schemas: dict[str, Any]) -> dict[str, Any]:
    prefix = _gv_path(rtype.group, rtype.version)
    scope = f"{prefix}/namespaces/{{namespace}}" if rtype.namespaced else prefix
    collection, item = f"{scope}/{rtype.plural}", f"{scope}/{rtype.plural}/{{name}}"
    namespaced = "Namespaced" if rtype.namespaced else ""
    gvk = _gvk(rtype.group, rtype.version, rtype.kind)
    ref, list_ref = _REF + component, _REF + component + "List"
    custom = _is_custom(rtype)
    op_name = _op_prefix(rtype.group, rtype.version)
    verbs = set(rtype.verbs)
    paths: dict[str, Any] = {}

    def op(
        action: str, verb: str, params: Sequence[str], schema_ref: str, **extra: Any
    ) -> dict[str, Any]:
        scope_word, suffix = extra.pop("scope", namespaced), extra.pop("suffix", "")
        operation = {
            "description": f"{verb} {rtype.kind}",
            "operationId": f"{verb}{op_name}{scope_word}{rtype.kind}{suffix}",
            "parameters": [_param(p) for p in params],
            "responses": _responses(schema_ref),
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": extra.pop("gvk", gvk),
        }
        operation.update(extra)
        return operation

    scope_params = [_path_param("namespace")] if rtype.namespaced else []
    collection_ops: dict[str, Any] = {}
    if "list" in verbs:
        collection_ops["get"] = op("list", "list", _LIST_PARAMS, list_ref)
    if "create" in verbs:
        collection_ops["post"] = op("post", "create", _WRITE_PARAMS, ref, requestBody=_body(ref))
    if "deletecollection" in verbs:
        collection_ops["delete"] = op(
            "deletecollection", "delete", (*_DELETE_PARAMS, *_LIST_PARAMS), ref,
            suffix="Collection",
        )  # fmt: skip
    if collection_ops:
        paths[collection] = {**collection_ops, "parameters": [*scope_params, _param("pretty")]}
    if rtype.namespaced and "list" in verbs:
        every_namespace = op("list", "list", _LIST_PARAMS, list_ref, scope="",
                             suffix="ForAllNamespaces")  # fmt: skip
        paths[f"{prefix}/{rtype.plural}"] = {
            "get": every_namespace,
            "parameters": [_param("pretty")],
        }
    item_params = [_path_param("name"), *scope_params, _param("pretty")]
    item_ops = _item_ops(op, verbs, ref, custom, "")
    if item_ops:
        paths[item] = {**item_ops, "parameters": item_params}
    for sub in sorted(rtype.subresources):
        sub_gvk, sub_ref = gvk, ref
        if sub in _SUBRESOURCE_KINDS:
            sub_group, sub_version, sub_kind = _SUBRESOURCE_KINDS[sub]
            found = builtin_schemas.definitions_for(sub_group, sub_version, sub_kind)
            if found is None:
                continue
            schemas.update(found[1])
            sub_gvk, sub_ref = _gvk(sub_group, sub_version, sub_kind), _REF + found[0]
        suffix = sub.capitalize()
        if sub == "token":
            ops = {"post": op("post", "create", _WRITE_PARAMS, sub_ref, suffix=suffix,
                              gvk=sub_gvk, requestBody=_body(sub_ref))}  # fmt: skip
        else:
            ops = _item_ops(op, verbs & {"get", "update", "patch"}, sub_ref, custom, suffix,
                            sub_gvk)  # fmt: skip
        if ops:
            paths[f"{item}/{sub}"] = {**ops, "parameters": item_params}
    return paths


def _item_ops(
    op: Callable[..., dict[str, Any]],
    verbs: set[str],
    ref: str,
    custom: bool,
    suffix: str,
    gvk: dict[str, str] | None = None,
) -> dict[str, Any]:
    extra = {"suffix": suffix} if gvk is None else {"suffix": suffix, "gvk": gvk}
    ops: dict[str, Any] = {}
    if "get" in verbs:
        ops["get"] = op("get", "read", (), ref, **extra)
    if "update" in verbs:
        ops["put"] = op("put", "replace", _WRITE_PARAMS, ref, requestBody=_body(ref), **extra)
    if "patch" in verbs:
        content_types = _PATCH_TYPES if custom else (*_PATCH_TYPES, _SMP)
        body = {
            "content": {t: {"schema": {"type": "object"}} for t in content_types},
            "required": True,
        }
        ops["patch"] = op("patch", "patch", (*_WRITE_PARAMS, "force"), ref, requestBody=body,
                          **extra)  # fmt: skip
    if "delete" in verbs and not suffix:
        ops["delete"] = op("delete", "delete", _DELETE_PARAMS, ref, **extra)
    return ops


def _op_prefix(group: str, version: str) -> str:
    words = group.removesuffix(".k8s.io").split(".") if group else ["core"]
    return "".join(w[:1].upper() + w[1:] for w in words) + version[:1].upper() + version[1:]


def _param(name: str) -> dict[str, Any]:
    kind, description = _PARAMETERS[name]
    schema: dict[str, Any] = {"type": kind, "uniqueItems": True}
    return {"name": name, "in": "query", "description": description, "schema": schema}


def _path_param(name: str) -> dict[str, Any]:
    description = f"{name} of the {'object' if name == 'name' else 'namespace'}"
    return {
        "name": name,
        "in": "path",
        "description": description,
        "required": True,
        "schema": {"type": "string", "uniqueItems": True},
    }


def _body(ref: str) -> dict[str, Any]:
    content = {t: {"schema": {"$ref": ref}} for t in _JSON_TYPES}
    return {"content": content, "required": True}


def _responses(ref: str) -> dict[str, Any]:
    content = {t: {"schema": {"$ref": ref}} for t in _JSON_TYPES}
    return {
        "200": {"description": "OK", "content": content},
        "201": {"description": "Created", "content": content},
        "401": {"description": "Unauthorized"},
    }
