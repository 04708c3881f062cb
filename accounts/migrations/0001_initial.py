"""API tokens and namespace grants join the accounts app, their tables and rows left in place.

Both models were the ``analyses`` app's (its migrations 0002 and 0003 created the tables,
``analyses_apitoken`` and ``analyses_namespacegrant``). This migration adds them to the accounts
app's state only; ``analyses`` 0008 removes them from its state; no table is created, renamed or
dropped. Their ``django_content_type`` rows move to the app label ``accounts``, so the
permissions that point at them (``view_apitoken``, ``change_namespacegrant``, …) stay held by
the users and groups that held them, and the admin log keeps its links.
"""

import django.db.models.deletion
from django.apps.registry import Apps
from django.conf import settings
from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor

MOVED = ("apitoken", "namespacegrant")


def _relabel(apps: Apps, old: str, new: str) -> None:
    content_types = apps.get_model("contenttypes", "ContentType")
    for model in MOVED:
        # A database that already has the new row (made by hand) keeps both: none is lost.
        if content_types.objects.filter(app_label=new, model=model).exists():
            continue
        content_types.objects.filter(app_label=old, model=model).update(app_label=new)


def forwards(apps: Apps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    _relabel(apps, "analyses", "accounts")


def backwards(apps: Apps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    _relabel(apps, "accounts", "analyses")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("analyses", "0007_history_values_as_text"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="ApiToken",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("name", models.CharField(blank=True, max_length=100)),
                        ("prefix", models.CharField(editable=False, max_length=16)),
                        ("digest", models.CharField(editable=False, max_length=64, unique=True)),
                        ("created_at", models.DateTimeField()),
                        (
                            "last_used_at",
                            models.DateTimeField(blank=True, editable=False, null=True),
                        ),
                        ("expires_at", models.DateTimeField(blank=True, editable=False, null=True)),
                        ("revoked", models.BooleanField(default=False)),
                        (
                            "user",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="api_tokens",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "verbose_name": "API token",
                        "db_table": "analyses_apitoken",
                        "ordering": ["-created_at", "-id"],
                    },
                ),
                migrations.CreateModel(
                    name="NamespaceGrant",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        (
                            "namespace",
                            models.CharField(
                                help_text="A namespace, or * for every one.", max_length=63
                            ),
                        ),
                        ("can_view", models.BooleanField(default=True, verbose_name="view")),
                        (
                            "can_edit",
                            models.BooleanField(
                                default=False,
                                help_text="Create, change, delete.",
                                verbose_name="edit",
                            ),
                        ),
                        (
                            "can_resume",
                            models.BooleanField(
                                default=False,
                                help_text="Resume, evaluate now.",
                                verbose_name="resume",
                            ),
                        ),
                        (
                            "group",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="namespace_grants",
                                to="auth.group",
                            ),
                        ),
                        (
                            "user",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="namespace_grants",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "verbose_name": "namespace grant",
                        "db_table": "analyses_namespacegrant",
                        "ordering": ["namespace", "id"],
                        "constraints": [
                            models.CheckConstraint(
                                condition=models.Q(
                                    models.Q(("group__isnull", True), ("user__isnull", False)),
                                    models.Q(("group__isnull", False), ("user__isnull", True)),
                                    _connector="OR",
                                ),
                                name="grant_user_xor_group",
                            )
                        ],
                    },
                ),
            ],
            database_operations=[migrations.RunPython(forwards, backwards)],
        ),
    ]
