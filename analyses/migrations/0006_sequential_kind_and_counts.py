"""Mirror a metric's ``sequential`` in its own column, and keep each evaluation's per-side counts.

Rows mirrored before this migration have a sequential metric's spec only in the analysis's
``spec``; the mirror rewrites a row only when its resourceVersion changes, so the column is
filled here from that spec.
"""

from typing import Any

from django.db import migrations, models


def _fill_sequential(apps: Any, schema_editor: Any) -> None:
    metric_model = apps.get_model("analyses", "AnalysisMetric")
    for metric in metric_model.objects.filter(query="").select_related("analysis"):
        for item in (metric.analysis.spec or {}).get("metrics") or []:
            named = isinstance(item, dict) and item.get("name") == metric.name
            if named and isinstance(item.get("sequential"), dict):
                metric.sequential = item["sequential"]
                metric.save(update_fields=["sequential"])


class Migration(migrations.Migration):
    dependencies = [
        ("analyses", "0005_compare"),
    ]

    operations = [
        migrations.AddField(
            model_name="analysismetric",
            name="sequential",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddField(
            model_name="metricresult",
            name="counted",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.RunPython(_fill_sequential, migrations.RunPython.noop),
    ]
