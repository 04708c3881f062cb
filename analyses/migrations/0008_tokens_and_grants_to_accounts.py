"""API tokens and namespace grants leave this app's state for the accounts app's.

State only: the tables stay (the models keep them with ``db_table``); ``accounts`` 0001 adds
the models to its state and moves their content types.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("analyses", "0007_history_values_as_text"),
        ("accounts", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="ApiToken"),
                migrations.DeleteModel(name="NamespaceGrant"),
            ],
            database_operations=[],
        ),
    ]
