"""Dispatch a PATCH body by Content-Type to the algorithms in devcluster/patch.py and strategic.py.

Called by handlers.Cluster.patch; answers 415 for types the real server refuses.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from devcluster import patch as patch_module
from devcluster import strategic
from devcluster.resources import ResourceType
from devcluster.status import ApiError, bad_request

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"
SUPPORTED = (JSON_PATCH, MERGE, STRATEGIC, APPLY)


def _unsupported(content_type: str, *, custom: bool = False) -> ApiError:
    accepted = [value for value in SUPPORTED if not (custom and value == STRATEGIC)]
    return ApiError(
        415,
        "the body of the request was in an unknown format - accepted media types include: "
        + ", ".join(accepted),
        reason="UnsupportedMediaType",
    )


def apply_patch(rtype: ResourceType, current: Any, raw: bytes, content_type: str) -> Any:
    """Return ``current`` with the patch applied."""
    media = content_type.split(";")[0].strip().lower()
    try:
        document = yaml.safe_load(raw) if media == APPLY else json.loads(raw)
    except (ValueError, yaml.YAMLError) as exc:
        raise bad_request(f"error decoding patch: {exc}") from exc
    try:
        if media == MERGE:
            return patch_module.json_merge_patch(current, document)
        if media == JSON_PATCH:
            return patch_module.json_patch(current, document)
        if media == STRATEGIC:
            if rtype.custom:
                raise _unsupported(media, custom=True)
            return strategic.strategic_merge_patch(current, document, rtype.group, rtype.kind)
        if media == APPLY:
            # Server-side apply approximated as a merge of the applied configuration.
            return patch_module.json_merge_patch(current, document)
    except patch_module.PatchError as exc:
        raise ApiError(exc.status, str(exc)) from exc
    raise _unsupported(media)
