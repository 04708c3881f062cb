"""``django.contrib.admin`` with Rollout Sentinel's site as the default one.

``sentinel_site.settings`` lists ``SentinelAdminConfig`` in ``INSTALLED_APPS`` instead of
``django.contrib.admin``; Django then builds ``django.contrib.admin.site`` from
``analyses.admin_site.SentinelAdminSite``. Kept apart from that module because Django imports
this one while it loads the apps, before any model can be imported.
"""

from django.contrib.admin.apps import AdminConfig


class SentinelAdminConfig(AdminConfig):
    default_site = "analyses.admin_site.SentinelAdminSite"
