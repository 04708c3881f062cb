"""``python manage.py create_api_token USERNAME [--name NAME]``: print a new REST API token.

The plaintext is printed once and never stored (``analyses.tokens``); revoke the token in the
admin. An unknown user is one clear line on stderr and exit status 1.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from analyses import tokens


class Command(BaseCommand):
    help = "Create a REST API token for USERNAME and print it (shown only this once)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="What the token is for, shown in the admin.")

    def handle(self, *args: Any, username: str, name: str, **options: Any) -> None:
        user_model = get_user_model()
        try:
            user = user_model._default_manager.get_by_natural_key(username)
        except user_model.DoesNotExist:
            raise CommandError(f"No user named {username!r}; create it first.") from None
        issued = tokens.issue(user, now=timezone.now(), name=name)
        self.stdout.write(issued.plaintext)
