"""``django.contrib.admin`` with Rollout Sentinel's site as the default one.

``sentinel_site.settings`` lists ``SentinelAdminConfig`` in ``INSTALLED_APPS`` instead of
``django.contrib.admin``; Django then builds ``django.contrib.admin.site`` from
``sentinel_site.admin_site.SentinelAdminSite``. Kept apart from that module because Django
imports this one while it loads the apps, before any model can be imported. The site lives in
the project, not in ``analyses.admin``: it orders every app's sections, and Django builds it
before any app's admin module is imported, which importing a module of the ``analyses.admin``
package (whose ``__init__`` registers the analysis admin) would break.
"""

from django.contrib.admin.apps import AdminConfig


class SentinelAdminConfig(AdminConfig):
    default_site = "sentinel_site.admin_site.SentinelAdminSite"
