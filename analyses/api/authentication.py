"""Token authentication for tooling: ``Authorization: Token <t>`` or ``Bearer <t>``.

Listed first in ``REST_FRAMEWORK["DEFAULT_AUTHENTICATION_CLASSES"]`` so that an unauthenticated
request gets 401 with a ``WWW-Authenticate`` challenge (DRF takes the challenge from the first
class); session authentication (browser, CSRF enforced) comes second.
"""

from __future__ import annotations

import math
from typing import Any

from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.request import Request

from accounts import tokens
from accounts.models import ApiToken
from analyses.api.throttles import TokenFailureThrottle


class TooManyFailures(AuthenticationFailed):
    """429, not 401: this client guessed wrong too often; ``Retry-After`` says how long."""

    status_code = 429
    default_detail = "Too many failed authentications; try again later."
    default_code = "throttled"


# Both spellings name the same tokens; Bearer is what generic HTTP tooling sends.
_KEYWORDS = (b"token", b"bearer")


class ApiTokenAuthentication(BaseAuthentication):
    """Authenticate a request by an ``ApiToken``; no header means "try the next class"."""

    def authenticate(self, request: Request) -> tuple[Any, ApiToken] | None:
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() not in _KEYWORDS:
            return None
        # The token is checked first: the lockout throttles failures, never a correct token,
        # so others' bad tokens from the same address (a NAT, a shared proxy) block no one who
        # holds a valid one. Checking costs a digest and an index lookup, and a 256-bit token
        # cannot be guessed, so a locked-out client learns nothing by being answered.
        throttle = TokenFailureThrottle()
        try:
            return self._authenticate(parts, request)
        except AuthenticationFailed:
            if throttle.blocked(request):
                refusal = TooManyFailures()
                # DRF's exception handler turns ``wait`` into the Retry-After header.
                refusal.wait = math.ceil(throttle.wait() or 1)  # type: ignore[attr-defined]
                raise refusal from None
            throttle.failed(request)
            raise

    def _authenticate(self, parts: list[bytes], request: Request) -> tuple[Any, ApiToken]:
        if len(parts) != 2:
            raise AuthenticationFailed(
                "Invalid Authorization header: send 'Token <token>' or 'Bearer <token>'."
            )
        try:
            plaintext = parts[1].decode("ascii")
        except UnicodeDecodeError:
            raise AuthenticationFailed("Invalid token.") from None
        token = tokens.check(plaintext, now=timezone.now())
        if token is None:
            raise AuthenticationFailed("Invalid, expired or revoked token.")
        if not token.user.is_active:
            raise AuthenticationFailed("The token's user is inactive.")
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        return 'Token realm="api", Bearer realm="api"'


class ApiTokenScheme(OpenApiAuthenticationExtension):
    """Describe ``ApiTokenAuthentication`` in the OpenAPI document."""

    target_class = "analyses.api.authentication.ApiTokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": (
                "'Token <token>' or 'Bearer <token>'; create one with "
                "`python manage.py create_api_token USERNAME`."
            ),
        }
