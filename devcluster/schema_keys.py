"""The structural-schema keywords and paths that validation, defaulting and pruning share.

``schema``, ``schema_defaults`` and ``schema_prune`` import these so that the three walks agree on
which root fields they skip and how they name a field's path.
"""

from __future__ import annotations

# The root fields every object has; the schema of a CRD version does not describe them.
ROOT_SKIPPED = ("apiVersion", "kind", "metadata")
PRESERVE_UNKNOWN = "x-kubernetes-preserve-unknown-fields"
EMBEDDED_RESOURCE = "x-kubernetes-embedded-resource"


def child_path(path: str, key: str) -> str:
    """Return the path of field ``key`` under ``path``, as the API server writes it."""
    return f"{path}.{key}" if path else key
