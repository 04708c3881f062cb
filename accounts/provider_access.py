"""Which metric providers a namespace may use, as the web app sees them.

Providers are described in docs/resource.md#providers.

The REST API and the admin form refuse a provider the operator would refuse, with a field
error, and the form offers only the providers a namespace may use. The web app reads only the
names and ``namespaces`` of SENTINEL_PROVIDERS_FILE (it mounts no Secret); the file is read
again when its modification time changes, and a version that does not parse keeps the last one.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence

import yaml
from django.conf import settings

from sentinel_core import provider as rules

_lock = threading.Lock()
_cache: dict[str, tuple[int, dict[str, tuple[str, ...] | None]]] = {}


def known() -> dict[str, tuple[str, ...] | None]:
    """Return every provider's name and namespace patterns (None: every namespace)."""
    path = getattr(settings.SENTINEL, "providers_file", "")
    if not path:
        return {rules.DEFAULT_PROVIDER: None}
    try:
        stamp = os.stat(path).st_mtime_ns
    except OSError:
        stamp = -1
    with _lock:
        cached = _cache.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        found = _read(path)
        if found is None:
            return cached[1] if cached is not None else {rules.DEFAULT_PROVIDER: None}
        _cache[path] = (stamp, found)
        return found


def allowed(namespace: str) -> tuple[str, ...]:
    """Return the providers ``namespace`` may use, ``default`` first when it may."""
    names = [n for n, p in known().items() if rules.namespace_allowed(p, namespace)]
    return tuple(sorted(names, key=lambda n: (n != rules.DEFAULT_PROVIDER, n)))


def refusals(namespace: str, providers: Sequence[str | None]) -> dict[str, list[str]]:
    """Return a field error for each metric (by its provider) ``namespace`` may not use."""
    table = known()
    errors: dict[str, list[str]] = {}
    for index, name in enumerate(providers):
        refused = rules.refusal(name or rules.DEFAULT_PROVIDER, namespace, table)
        if refused is not None:
            errors[f"spec.metrics[{index}].provider"] = [refused[1]]
    return errors


def _read(path: str) -> dict[str, tuple[str, ...] | None] | None:
    try:
        with open(path, encoding="utf-8") as handle:
            raw = yaml.safe_load(handle)
    except (OSError, yaml.YAMLError):
        return None
    return rules.access(raw)
