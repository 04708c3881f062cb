"""The admin's template pages: both kinds listed, one page per template, edited in the cluster.

``analysis.AnalysisAdmin`` routes ``templates/`` (the list), ``templates/cluster/<name>/`` and
``templates/namespaced/<namespace>/<name>/`` (a template's page) here, and asks
``resolved_metrics`` for the analysis page's table of where each metric came from.

Templates have no mirror (docs/templates.md): every page reads them from the API server through
``analyses.templates_service``, as the REST API does, and an edit is a replace there, applied
only if the template is still at the ``resourceVersion`` the page showed. Which analyses use a
template comes from the mirror (their ``spec.templates``, and ``status.templates`` for the
generation each last resolved). Who may do what (docs/security.md): the model permissions on
``Analysis``; a namespaced template is its namespace's (``accounts.access.allows``, as an
analysis there); a cluster template is read by anyone who may view analyses and written only by
those ``accounts.access.may_write_cluster_templates`` allows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import yaml
from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from accounts import access, scope
from analyses import services
from analyses import templates_service as service
from analyses.models import Analysis


class TemplateAdmin(Protocol):
    """What the template pages need from the model admin that routes them."""

    admin_site: Any

    def has_view_or_change_permission(self, request: HttpRequest, obj: Any = None) -> bool: ...

    def has_perm_to_act(self, request: HttpRequest) -> bool: ...


@dataclass(frozen=True)
class User:
    """An analysis that names a template, and the generation of it that it last resolved."""

    analysis: Analysis
    url: str
    # From status.templates; None before the operator resolved this template for it.
    generation: int | None


@dataclass(frozen=True)
class Row:
    """One template in the list."""

    kind: str
    namespace: str | None
    name: str
    description: str
    metrics: tuple[str, ...]
    args: tuple[str, ...]
    generation: int | None
    url: str
    used_by: int


@dataclass(frozen=True)
class ResolvedRow:
    """One metric the operator evaluated for an analysis, and where it came from."""

    name: str
    # What it reads: its query, or a sequential metric's selectors.
    reads: str
    # "this analysis", or the template's kind and name.
    origin: str
    # The template's page; empty for the analysis's own metric.
    url: str


class TemplateForm(forms.Form):
    """A template's spec as YAML, and the version of the template the page showed."""

    spec = forms.CharField(
        widget=forms.Textarea(
            attrs={"rows": 24, "cols": 100, "class": "sentinel-query", "spellcheck": "false"}
        ),
        label="Spec (YAML)",
        help_text=(
            "The whole spec of the template (docs/templates.md): metrics, args and the optional "
            "interval, failureLimit, failureWindow, falsePauseRate and description. The API "
            "server validates it; every analysis using the template counts afresh after an edit."
        ),
    )
    # The metadata.resourceVersion the page showed: an edit made meanwhile is not overwritten.
    resource_version = forms.CharField(widget=forms.HiddenInput, required=False)

    def clean_spec(self) -> dict[str, Any]:
        try:
            value = yaml.safe_load(self.cleaned_data["spec"])
        except yaml.YAMLError as exc:
            raise forms.ValidationError(f"Not YAML: {exc}") from exc
        if not isinstance(value, dict):
            raise forms.ValidationError("The spec must be a mapping (metrics: ..., args: ...).")
        return value


def list_url() -> str:
    """Return the address of the templates' list."""
    return reverse("admin:analyses_templates")


def template_url(namespace: str | None, name: str) -> str:
    """Return the address of one template's page (``namespace`` None: a cluster template)."""
    if namespace is None:
        return reverse("admin:analyses_clustertemplate", args=[name])
    return reverse("admin:analyses_template", args=[namespace, name])


def list_view(admin: TemplateAdmin, request: HttpRequest) -> HttpResponse:
    """List the cluster templates and the namespaced templates the user may see."""
    if not admin.has_view_or_change_permission(request):
        raise PermissionDenied
    problems: list[str] = []
    uses = _uses(request)
    rows: dict[str, list[Row]] = {"cluster": [], "namespaced": []}
    try:
        for item in service.list_templates(service.CLUSTER):
            rows["cluster"].append(_row(service.CLUSTER, item, uses))
    except services.ServiceError as exc:
        problems.append(f"Cluster templates not listed. {_failure(exc)}")
    try:
        for item in _namespaced_templates(request):
            rows["namespaced"].append(_row(service.NAMESPACED, item, uses))
    except services.ServiceError as exc:
        problems.append(f"Namespaced templates not listed. {_failure(exc)}")
    context = {
        **admin.admin_site.each_context(request),
        "title": "Analysis templates",
        "opts": Analysis._meta,
        "cluster_rows": rows["cluster"],
        "namespaced_rows": rows["namespaced"],
        "problems": problems,
    }
    return TemplateResponse(request, "admin/analyses/templates/list.html", context)


def cluster_view(admin: TemplateAdmin, request: HttpRequest, name: str) -> HttpResponse:
    """Show (and on POST, replace) one cluster template."""
    return _template_view(admin, request, service.CLUSTER, None, name)


def namespaced_view(
    admin: TemplateAdmin, request: HttpRequest, namespace: str, name: str
) -> HttpResponse:
    """Show (and on POST, replace) one template of ``namespace``."""
    if not scope.in_scope(namespace) or not access.allows(request.user, access.Verb.GET, namespace):
        # As an analysis the user may not see: it does not exist for them.
        raise Http404(f"No RolloutAnalysisTemplate {namespace}/{name}.")
    return _template_view(admin, request, service.NAMESPACED, namespace, name)


def may_edit(
    admin: TemplateAdmin, request: HttpRequest, kind: service.Kind, namespace: str | None
) -> bool:
    """Return whether the user may replace a template of ``kind`` in ``namespace``."""
    if not admin.has_perm_to_act(request):
        return False
    if namespace is None or not kind.namespaced:
        return access.may_write_cluster_templates(request.user, access.Verb.UPDATE)
    return access.allows(request.user, access.Verb.UPDATE, namespace)


def _template_view(
    admin: TemplateAdmin,
    request: HttpRequest,
    kind: service.Kind,
    namespace: str | None,
    name: str,
) -> HttpResponse:
    if not admin.has_view_or_change_permission(request):
        raise PermissionDenied
    editable = may_edit(admin, request, kind, namespace)
    if request.method == "POST" and not editable:
        raise PermissionDenied
    try:
        current = service.get_template(kind, namespace, name)
    except service.TemplateNotFound as exc:
        raise Http404(str(exc)) from exc
    except services.ServiceError as exc:
        # Nothing to show but why: the page says it once.
        messages.error(request, f"{kind.key(namespace, name)} not read. {_failure(exc)}")
        return HttpResponseRedirect(list_url())
    meta = current.get("metadata") or {}
    spec = current.get("spec") or {}
    form: TemplateForm | None = None
    if editable:
        if request.method == "POST":
            form = TemplateForm(request.POST)
            if form.is_valid():
                refusal = _replace(kind, namespace, name, form.cleaned_data)
                if refusal is None:
                    messages.success(
                        request,
                        f"{kind.key(namespace, name)} saved in the cluster; the analyses using "
                        "it count afresh at their next evaluation.",
                    )
                    return HttpResponseRedirect(template_url(namespace, name))
                # The user's text stays in the form, with the cluster's answer above it.
                form.add_error(None, refusal)
        else:
            form = TemplateForm(
                initial={
                    "spec": _yaml(spec),
                    "resource_version": str(meta.get("resourceVersion") or ""),
                }
            )
    context = {
        **admin.admin_site.each_context(request),
        "title": f"{kind.name} {kind.key(namespace, name).split(' ', 1)[1]}",
        "opts": Analysis._meta,
        "kind": kind.name,
        "namespace": namespace,
        "name": name,
        "meta": meta,
        "spec": spec,
        "spec_yaml": _yaml(spec),
        "args": list(spec.get("args") or []),
        "metrics": list(spec.get("metrics") or []),
        "defaults": [
            (key, spec[key])
            for key in ("interval", "failureLimit", "failureWindow", "falsePauseRate")
            if key in spec
        ],
        "users": _users(request, kind, namespace, name),
        "form": form,
        "list_url": list_url(),
    }
    return TemplateResponse(request, "admin/analyses/templates/detail.html", context)


def resolved_metrics(analysis: Analysis) -> list[ResolvedRow]:
    """Return the metrics the operator last evaluated for ``analysis``, each with its origin.

    From ``status.resolvedMetrics`` (docs/templates.md), which the operator writes at each
    evaluation; empty before the first one and while resolution fails.
    """
    rows = []
    for item in (analysis.status or {}).get("resolvedMetrics") or []:
        if not isinstance(item, dict):
            continue
        origin = item.get("template")
        if isinstance(origin, dict) and origin.get("name"):
            cluster = bool(origin.get("clusterScope"))
            namespace = None if cluster else analysis.namespace
            kind = service.CLUSTER if cluster else service.NAMESPACED
            where = kind.key(namespace, str(origin["name"]))
            url = template_url(namespace, str(origin["name"]))
        else:
            where, url = "this analysis", ""
        rows.append(ResolvedRow(str(item.get("name") or ""), _reads(item), where, url))
    return rows


def _reads(metric: dict[str, Any]) -> str:
    if metric.get("query"):
        return str(metric["query"])
    sequential = metric.get("sequential")
    if isinstance(sequential, dict):
        parts = [
            f"{key}: {sequential[key]}"
            for key in ("bad", "total", "histogram")
            if key in sequential
        ]
        return "; ".join(parts)
    return ""


def _replace(
    kind: service.Kind, namespace: str | None, name: str, data: dict[str, Any]
) -> str | None:
    """Replace the template; return None, or the one sentence saying why nothing was written."""
    try:
        service.replace_template(
            kind, namespace, name, data["spec"], resource_version=data["resource_version"] or None
        )
    except service.TemplateNotFound:
        return f"Not saved. The {kind.key(namespace, name)} was deleted in the cluster."
    except services.ResourceRejected as exc:
        fields = [f"{path}: {line}" for path, lines in exc.field_errors.items() for line in lines]
        return " ".join(["Not saved.", exc.message, *fields])
    except services.ServiceError as exc:
        return f"Not saved. {_failure(exc)}"
    return None


def _failure(exc: services.ServiceError) -> str:
    if isinstance(exc, services.ClusterUnavailable):
        return f"Cluster unreachable: {exc.message}"
    if isinstance(exc, services.ResourceConflict):
        return f"Changed in the cluster: {exc.message}"
    return exc.message


def _yaml(spec: dict[str, Any]) -> str:
    return yaml.safe_dump(spec, sort_keys=False, width=100, allow_unicode=True)


def _namespaced_templates(request: HttpRequest) -> list[dict[str, Any]]:
    """Return the namespaced templates the user may list, by namespace then name.

    With ``SENTINEL_NAMESPACES`` one list per namespace (a namespace-scoped install may not list
    across namespaces); without it one list of every namespace's.
    """
    listed = scope.namespaces()
    if listed:
        items = [
            item
            for namespace in listed
            if access.allows(request.user, access.Verb.LIST, namespace)
            for item in service.list_templates(service.NAMESPACED, namespace)
        ]
    else:
        everywhere = service.list_templates(service.NAMESPACED, None)
        allowed: dict[str, bool] = {}
        items = []
        for item in everywhere:
            namespace = str((item.get("metadata") or {}).get("namespace") or "")
            if namespace not in allowed:
                allowed[namespace] = access.allows(request.user, access.Verb.LIST, namespace)
            if allowed[namespace]:
                items.append(item)
    return sorted(
        items,
        key=lambda item: (
            str(item["metadata"].get("namespace") or ""),
            str(item["metadata"].get("name") or ""),
        ),
    )


# (cluster?, namespace or "", name) -> the analyses naming that template.
_Uses = dict[tuple[bool, str, str], list[Analysis]]


def _uses(request: HttpRequest) -> _Uses:
    """Return which live analyses the user may see name which template (their spec.templates)."""
    found: _Uses = {}
    live = access.visible(request.user, Analysis.objects.live()).order_by("namespace", "name")
    # Only the rows that name templates are read (specs and statuses are the heavy columns).
    live = live.filter(spec__has_key="templates")
    for analysis in live.only("pk", "namespace", "name", "spec", "status"):
        for ref in (analysis.spec or {}).get("templates") or []:
            if not isinstance(ref, dict) or not ref.get("name"):
                continue
            cluster = bool(ref.get("clusterScope"))
            key = (cluster, "" if cluster else analysis.namespace, str(ref["name"]))
            found.setdefault(key, []).append(analysis)
    return found


def _row(kind: service.Kind, item: dict[str, Any], uses: _Uses) -> Row:
    meta = item.get("metadata") or {}
    spec = item.get("spec") or {}
    namespace = str(meta.get("namespace") or "") if kind.namespaced else None
    name = str(meta.get("name") or "")
    return Row(
        kind=kind.name,
        namespace=namespace,
        name=name,
        description=str(spec.get("description") or ""),
        metrics=tuple(str(m.get("name")) for m in spec.get("metrics") or [] if isinstance(m, dict)),
        args=tuple(str(a.get("name")) for a in spec.get("args") or [] if isinstance(a, dict)),
        generation=meta.get("generation"),
        url=template_url(namespace, name),
        used_by=len(uses.get((not kind.namespaced, namespace or "", name), [])),
    )


def _users(
    request: HttpRequest, kind: service.Kind, namespace: str | None, name: str
) -> list[User]:
    cluster = not kind.namespaced
    analyses = _uses(request).get((cluster, namespace or "", name), [])
    users = []
    for analysis in analyses:
        generation = None
        for used in (analysis.status or {}).get("templates") or []:
            if (
                isinstance(used, dict)
                and used.get("name") == name
                and bool(used.get("clusterScope")) == cluster
            ):
                generation = used.get("generation")
        url = reverse("admin:analyses_analysis_change", args=[analysis.pk])
        users.append(User(analysis, url, generation))
    return users
