"""docs/templates.md#placeholders: an argument's value cannot change a query's shape, asked of
a real Prometheus.

A template selects ``up{job="{{ args.job }}"}``. Inserted as it is, the value
``"} or vector(1) #`` would close the selector, add ``or vector(1)`` and comment the rest out:
a query that always answers 1. Resolved, the value stays inside its string literal, and the
real Prometheus (which scrapes the test kit's metrics app as job ``metrics-app``) finds no such
job: no data, no error. A plain value selects the real series.
"""

from __future__ import annotations

import pytest

from sentinel_core.templates import Template, TemplateRef, resolve
from sentinel_operator.prometheus import PrometheusClient
from testkit.prometheus import PrometheusServer

_REF = TemplateRef("jobs", cluster_scope=True)
_NASTY = [
    '"} or vector(1) #',
    "\"} or vector(1) or up{job='x",
    "') or vector(1) #",
    "\\",
    'a\\"} or vector(1) #',
    "line\nbreak",
]


def _query(template_query: str, value: str) -> str:
    template = Template(
        _REF,
        1,
        {
            "args": [{"name": "job"}],
            "metrics": [{"name": "up", "query": template_query, "maxValue": 0}],
        },
    )
    raw = {
        "target": {"name": "checkout"},
        "templates": [{"name": "jobs", "clusterScope": True}],
        "args": [{"name": "job", "value": value}],
    }
    query = resolve(raw, "shop", {_REF: template}).spec["metrics"][0]["query"]
    assert isinstance(query, str)
    return query


@pytest.mark.parametrize("quote", ['"', "'"])
def test_a_plain_value_selects_the_real_series(prometheus: PrometheusServer, quote: str) -> None:
    query = _query(f"up{{job={quote}{{{{ args.job }}}}{quote}}}", "metrics-app")
    prometheus.wait_for(query, lambda seen: len(seen) == 1, timeout=15)
    result = PrometheusClient(prometheus.url).measure("up", query)
    assert (result.error, result.value) == (None, 1.0)


@pytest.mark.parametrize("quote", ['"', "'"])
@pytest.mark.parametrize("value", _NASTY)
def test_a_value_meant_to_break_out_stays_a_label_value(
    prometheus: PrometheusServer, quote: str, value: str
) -> None:
    template_query = f"up{{job={quote}{{{{ args.job }}}}{quote}}}"
    naive = template_query.replace("{{ args.job }}", value)
    client = PrometheusClient(prometheus.url)
    if value.startswith(quote):
        # What escaping prevents: inserted as it is, the value rewrites the query into one that
        # answers 1 (or one Prometheus refuses).
        unescaped = client.measure("up", naive)
        assert unescaped.value == 1.0 or unescaped.error is not None
    result = client.measure("up", _query(template_query, value))
    assert result.error is None, result.message
    assert result.value is None  # no job of that name: no data
