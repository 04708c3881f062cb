"""The REST API's JSON parser: malformed, too deep or too large bodies are client errors.

Installed as ``REST_FRAMEWORK["DEFAULT_PARSER_CLASSES"]``. Python's ``json`` recurses once per
nesting level, so ``[[[[…]]]]`` a few thousand deep raised ``RecursionError`` (a 500); here
nesting is counted before decoding and anything deeper than ``MAX_DEPTH`` is a 400. A body over
``DATA_UPLOAD_MAX_MEMORY_SIZE`` is a 413, whether or not it announced its length.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from rest_framework import exceptions, status
from rest_framework.parsers import JSONParser

# A RolloutAnalysis body nests about six levels; 64 leaves room and stops abuse early.
MAX_DEPTH = 64


class PayloadTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request body is larger than 1 MiB."
    default_code = "payload_too_large"


class BoundedJSONParser(JSONParser):
    """Parse JSON of at most ``DATA_UPLOAD_MAX_MEMORY_SIZE`` bytes and ``MAX_DEPTH`` levels."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise PayloadTooLarge()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise exceptions.ParseError("JSON parse error - the body is not UTF-8.") from None
        # Counting brackets is C-fast; only a body with many of them is scanned for depth.
        openers = text.count("[") + text.count("{")
        if openers > MAX_DEPTH and _depth(text) > MAX_DEPTH:
            raise exceptions.ParseError(f"JSON parse error - nested deeper than {MAX_DEPTH}.")
        try:
            return json.loads(text, parse_constant=_no_constant)
        except (ValueError, RecursionError) as exc:
            raise exceptions.ParseError(f"JSON parse error - {exc}") from None


def _no_constant(name: str) -> Any:
    # NaN and Infinity are not JSON; DRF's own parser refuses them too.
    raise ValueError(f"{name} is not valid JSON")


def _depth(text: str) -> int:
    """Return the deepest bracket nesting of ``text``, not counting brackets in strings."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest
