"""The one place the target kinds are registered (``workload_kinds.KINDS``)."""

from __future__ import annotations

from sentinel_core.workload_kinds import daemonset, deployment, statefulset
from sentinel_core.workload_kinds._kind import WorkloadKind

# In the CRD's enum order (``sentinel_core.kinds.KINDS`` names them).
KINDS: tuple[WorkloadKind, ...] = (deployment.KIND, statefulset.KIND, daemonset.KIND)
_BY_NAME = {kind.name: kind for kind in KINDS}


def kind_named(name: str) -> WorkloadKind:
    """Return the target kind ``name`` (``spec.target.kind``, which the spec's parse checked)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown target kind {name!r}") from None
