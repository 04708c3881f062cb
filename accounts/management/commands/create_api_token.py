"""``manage.py create_api_token USERNAME [--name NAME] [--expires-in 90d]``: print a new token.

The plaintext is printed once and never stored (``accounts.tokens``); revoke the token in the
admin. An unknown user is one clear line on stderr and exit status 1.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from accounts import tokens

_LIFETIME = re.compile(r"^(?P<value>\d{1,6})(?P<unit>[mhd])$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days"}


class Command(BaseCommand):
    help = "Create a REST API token for USERNAME and print it (shown only this once)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="What the token is for, shown in the admin.")
        parser.add_argument(
            "--expires-in",
            default="",
            help="Lifetime such as 90d, 12h or 30m; without it the token lasts until revoked.",
        )

    def handle(self, *args: Any, username: str, name: str, expires_in: str, **options: Any) -> None:
        lifetime = None
        if expires_in:
            match = _LIFETIME.match(expires_in.strip())
            if not match or int(match["value"]) <= 0:
                raise CommandError(
                    f"--expires-in {expires_in!r} is not a lifetime; use a positive number "
                    "with m, h or d, e.g. 90d."
                )
            lifetime = timedelta(**{_UNITS[match["unit"]]: int(match["value"])})
        user_model = get_user_model()
        try:
            user = user_model._default_manager.get_by_natural_key(username)
        except user_model.DoesNotExist:
            raise CommandError(f"No user named {username!r}; create it first.") from None
        issued = tokens.issue(user, now=timezone.now(), name=name, expires_in=lifetime)
        self.stdout.write(issued.plaintext)
