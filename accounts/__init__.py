"""Django app: who may use Rollout Sentinel, and where (docs/security.md).

REST API tokens (``tokens``, ``models.ApiToken``), namespace grants (``models.NamespaceGrant``),
the policy that answers "may this user do this in that namespace" (``access``, with
``SENTINEL_NAMESPACES`` as the boundary: ``scope``; which metric providers a namespace may use:
``provider_access``), single sign-on behind a proxy (``sso``) and throttled admin logins
(``login_limits``). It knows analyses only as querysets with a ``namespace`` column; the
``analyses`` app above it asks it.
"""
