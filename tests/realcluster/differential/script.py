"""The differential script: every operation, in the order it runs against each server."""

from __future__ import annotations

from tests.realcluster.differential import ops_access, ops_api, ops_crd, ops_invalid, ops_kinds
from tests.realcluster.differential.runner import Op

OPS: list[Op] = [
    *ops_crd.setup.ops,
    *ops_kinds.script.ops,
    *ops_crd.semantics.ops,
    *ops_invalid.script.ops,
    *ops_api.script.ops,
    *ops_access.script.ops,
]
