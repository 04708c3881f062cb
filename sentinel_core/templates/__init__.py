"""Analysis templates: resolve the templates an analysis names into its spec (docs/templates.md).

The reconciler reads the templates ``template_refs`` names, hands them to ``resolve`` and parses
what it returns with ``parse_spec``; a ``TemplateError`` carries the stable reason of the
``Ready=False`` condition (``TemplateNotFound``, ``MissingArgument``, ``InvalidTemplate``, or
``InvalidSpec`` for the analysis's own ``templates`` and ``args``). The REST API and the admin
check a spec before writing it with ``parse_analysis_spec``. The parts are private:
``_placeholders`` (placeholders and their escaping), ``_resolve``, ``_analysis``.
"""

from sentinel_core.templates._analysis import TemplatedSpec, names_templates, parse_analysis_spec
from sentinel_core.templates._placeholders import escape_in_string
from sentinel_core.templates._resolve import (
    DEFAULTED,
    MAX_ARGS,
    MAX_TEMPLATES,
    Resolved,
    Template,
    TemplateError,
    TemplateRef,
    TemplateSpecError,
    UsedTemplate,
    resolve,
    template_refs,
)

__all__ = [
    "DEFAULTED",
    "MAX_ARGS",
    "MAX_TEMPLATES",
    "Resolved",
    "Template",
    "TemplateError",
    "TemplateRef",
    "TemplateSpecError",
    "TemplatedSpec",
    "UsedTemplate",
    "escape_in_string",
    "names_templates",
    "parse_analysis_spec",
    "resolve",
    "template_refs",
]
