"""Which metric provider a metric uses and who may use it, as pure functions.

The providers file is described in docs/operations.md#metric-providers.

A resource only names a provider (``spec.metrics[].provider``); its address, credentials and
the namespaces allowed to use it are the operator's configuration. Keeping the name check and
the allow-list here lets the REST API, the admin form and the operator refuse alike.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Mapping, Sequence

DEFAULT_PROVIDER = "default"
# A DNS-1123 label, as the CRD's pattern says.
PROVIDER_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
MAX_PROVIDER_NAME_LENGTH = 63
PROVIDER_NAME_RULE = (
    "must be a DNS-1123 label: at most 63 lower-case letters, digits and '-', "
    "starting and ending with a letter or digit"
)


def parse_provider(
    item: Mapping[str, object], path: str, add: Callable[[str, str], None]
) -> str | None:
    """Return the metric's ``provider`` as written (None when absent), reporting a bad one."""
    raw = item.get("provider")
    if raw is None:
        return None
    if (
        not isinstance(raw, str)
        or len(raw) > MAX_PROVIDER_NAME_LENGTH
        or not PROVIDER_NAME.fullmatch(raw)
    ):
        add(f"{path}.provider", PROVIDER_NAME_RULE)
        return None
    return raw


def namespace_allowed(patterns: Sequence[str] | None, namespace: str) -> bool:
    """Return whether ``namespace`` may use a provider allowed for ``patterns``.

    None (no ``namespaces`` key) allows every watched namespace; a pattern is a namespace name
    or a shell-style glob such as ``payments-*`` (``fnmatchcase``: no case folding).
    """
    if patterns is None:
        return True
    return any(fnmatch.fnmatchcase(namespace, pattern) for pattern in patterns)


def refusal(
    provider: str, namespace: str, known: Mapping[str, Sequence[str] | None]
) -> tuple[str, str] | None:
    """Return ``(reason, message)`` when ``namespace`` may not use ``provider``, else None.

    ``known`` maps each configured provider's name to its ``namespaces`` patterns. The reason is
    ``UnknownProvider`` or ``ProviderNotAllowed`` (``MeasurementError``'s values).
    """
    if provider not in known:
        return (
            "UnknownProvider",
            f"provider {provider!r} is not configured; the operator's configuration "
            "(SENTINEL_PROVIDERS_FILE) decides which providers exist",
        )
    if not namespace_allowed(known[provider], namespace):
        return (
            "ProviderNotAllowed",
            f"provider {provider!r} may not be used from namespace {namespace!r}; the "
            "operator's configuration (SENTINEL_PROVIDERS_FILE) decides who may use it",
        )
    return None


def access(raw: object) -> dict[str, tuple[str, ...] | None] | None:
    """Return each provider's ``namespaces`` from a parsed providers file, None if malformed.

    What the web app needs to refuse a provider as the operator would, without the secrets or
    the full schema (the operator validates that); ``default`` is added unless defined.
    """
    items = raw.get("providers") if isinstance(raw, Mapping) else None
    if not isinstance(items, list):
        return None
    found: dict[str, tuple[str, ...] | None] = {}
    for item in items:
        name = item.get("name") if isinstance(item, Mapping) else None
        if not isinstance(name, str) or not PROVIDER_NAME.fullmatch(name):
            return None
        patterns = item.get("namespaces")
        if patterns is not None and (
            not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns)
        ):
            return None
        found[name] = tuple(patterns) if patterns is not None else None
    found.setdefault(DEFAULT_PROVIDER, None)
    return found
