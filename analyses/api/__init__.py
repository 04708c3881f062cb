"""The REST API (docs/api.md): DRF views over the mirror, writes through ``analyses.services``.

The layer sits above the operator and the clients: it imports ``analyses.services``,
``analyses.models`` and ``sentinel_operator``'s pure modules, and nothing below imports it.
``sentinel_site.urls`` mounts ``analyses.api.urls`` at ``/api/v1/``.
"""
