"""Read the templates an analysis names and resolve them into its spec, before it is parsed.

The reconciler calls ``resolve_object`` on the analysis it has just read (docs/templates.md),
with the templates it names as the operator's caches held them when the analysis came from
there too: a template the cache did not hold, or held at a generation older than the one the
status was resolved from, is read with a GET; without the caches' copies every template is
(docs/templates.md#how-the-operator-reads-templates). What comes back is the object with the
resolved spec, which ``AnalysisResource.read`` parses as any other, the ``status.templates``
entries, whether a template's generation changed since the status was written (the reconciler
then counts afresh, as after a spec edit), and the resolved metrics with the template each came
from (``status.resolvedMetrics``, for kubectl, the REST API and the admin). A template that cannot
be resolved gives a ``TemplateSpecError`` as the spec, which the decision core reports on
``Ready=False`` with its own reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from sentinel_cluster import kube
from sentinel_core.templates import (
    Resolved,
    Template,
    TemplateError,
    TemplateRef,
    TemplateSpecError,
    resolve,
    template_refs,
)

_BASE = f"/apis/{kube.GROUP}/{kube.VERSION}"


def template_path(ref: TemplateRef, namespace: str) -> str:
    """Return the API path of the template ``ref`` names for an analysis in ``namespace``."""
    if ref.cluster_scope:
        return f"{_BASE}/clusterrolloutanalysistemplates/{quote(ref.name)}"
    return f"{_BASE}/namespaces/{quote(namespace)}/rolloutanalysistemplates/{quote(ref.name)}"


@dataclass(frozen=True)
class Resolution:
    """The analysis object to parse, its ``status.templates`` and whether one of them changed."""

    obj: Mapping[str, Any]
    # None: the analysis names no template, so its status has no ``templates``. Empty while
    # resolution fails, so that the evaluation after it counts afresh (the template may have
    # been deleted and created again, another guard under the same name and generation).
    templates: tuple[dict[str, Any], ...] | None = None
    changed: bool = False
    error: TemplateSpecError | None = None
    # status.resolvedMetrics: the metrics evaluated, placeholders replaced, each with the
    # template it came from (none: the analysis's own). None and empty as ``templates``.
    metrics: tuple[dict[str, Any], ...] | None = None


def resolve_object(
    client: kube.KubeClient,
    obj: Mapping[str, Any],
    cached: Sequence[Mapping[str, Any]] | None = None,
) -> Resolution:
    """Return the analysis ``obj`` with its templates resolved; raise ``kube.KubeError`` when a
    template cannot be read (other than 404, which is ``TemplateNotFound``).

    ``cached``: the templates ``obj`` names as the caches held them (``informer.CachedTemplate``
    entries), or None to read every one from the API server.
    """
    spec = obj.get("spec")
    if not isinstance(spec, Mapping) or not (spec.get("templates") or spec.get("args")):
        return Resolution(obj)
    namespace = str((obj.get("metadata") or {}).get("namespace") or "")
    held = _held(cached)
    seen = _generations((obj.get("status") or {}).get("templates"))
    try:
        refs = template_refs(spec)
        read: dict[TemplateRef, Template] = {}
        for ref in refs:
            found = held.get(ref)
            if found is None or _generation(found) < seen.get(ref, 0):
                # Not in the cache (perhaps created a moment ago), or the cache is behind
                # the status: the API server's answer is the one to resolve from.
                try:
                    found = client.request("GET", template_path(ref, namespace))
                except kube.NotFound:
                    continue
            read[ref] = Template(ref, _generation(found), found.get("spec") or {})
        resolved = resolve(spec, namespace, read)
    except TemplateError as exc:
        return Resolution(obj, templates=(), error=TemplateSpecError(exc), metrics=())
    used = tuple(template.to_dict() for template in resolved.templates)
    before = (obj.get("status") or {}).get("templates")
    changed = isinstance(before, list) and before != list(used)
    return Resolution(
        {**obj, "spec": resolved.spec}, used, changed, metrics=_with_origins(resolved)
    )


def _generation(template: Mapping[str, Any]) -> int:
    generation = (template.get("metadata") or {}).get("generation")
    return generation if isinstance(generation, int) else 0


def _held(cached: Sequence[Mapping[str, Any]] | None) -> dict[TemplateRef, Mapping[str, Any]]:
    """Return the templates the caches held, by reference (those they did not hold left out)."""
    held: dict[TemplateRef, Mapping[str, Any]] = {}
    for entry in cached or ():
        template = entry.get("template")
        if isinstance(template, Mapping) and isinstance(entry.get("name"), str):
            held[TemplateRef(entry["name"], bool(entry.get("clusterScope")))] = template
    return held


def _generations(entries: Any) -> dict[TemplateRef, int]:
    """Return the generation of each template ``status.templates`` says the spec came from."""
    out: dict[TemplateRef, int] = {}
    for entry in entries if isinstance(entries, list) else ():
        if isinstance(entry, Mapping) and isinstance(entry.get("name"), str):
            generation = entry.get("generation")
            ref = TemplateRef(entry["name"], bool(entry.get("clusterScope")))
            out[ref] = generation if isinstance(generation, int) else 0
    return out


def _with_origins(resolved: Resolved) -> tuple[dict[str, Any], ...]:
    """Return the resolved metrics for the status, each naming the template it came from."""
    out = []
    for metric in resolved.spec.get("metrics") or []:
        if not isinstance(metric, Mapping) or not isinstance(metric.get("name"), str):
            continue  # the analysis's own malformed entry: parse_spec reports it (InvalidSpec)
        ref = resolved.origins.get(metric["name"])
        entry = dict(metric)
        if ref is not None:
            entry["template"] = {"name": ref.name, "clusterScope": ref.cluster_scope}
        out.append(entry)
    return tuple(out)
