"""Each metric kind's card, graphs and history cells on the analysis page say what they show.

The page of an analysis with a metric of every kind (a threshold, one against its baseline,
compare, sequential on counters) and of a StatefulSet's with a histogram's sequential metric,
seeded as the operator records them (``tests.ui.factories``), through the Django test client:

- every card has the same parts: its name and how it is judged, what it reads from Prometheus
  (its query, or a sequential metric's selectors), when it fails, the last verdict's sentence,
  and a caption over each graph;
- the graphs' text (parsed SVG) writes numbers as the tables do, six significant digits, never
  the raw floating point the history keeps (0.09144607843137259);
- a sequential metric's history cell is its evidence out of the evidence needed.

tests/ui/test_accessibility.py opens the same pages in a browser (axe, no sideways scrolling).
"""

from __future__ import annotations

import html
import math
import re
import xml.etree.ElementTree as ET

import pytest
from django.test import Client
from django.urls import reverse

from analyses.models import Analysis
from analyses.numbers import readable
from tests.ui import factories

pytestmark = pytest.mark.django_db

SVG = "{http://www.w3.org/2000/svg}"
# A number as a label writes it: digits, a decimal part, an exponent.
NUMBER = re.compile(r"\d+(?:\.\d+)?(?:e[+-]?\d+)?")


def _page(client: Client, row: Analysis) -> str:
    response = client.get(reverse("admin:analyses_analysis_change", args=[row.pk]))
    assert response.status_code == 200
    return response.content.decode()


def _cards(page: str) -> dict[str, str]:
    """Return each metric card's HTML by its metric's name."""
    found = re.findall(
        r'<section class="module sentinel-chart" data-metric="([^"]+)".*?</section>', page, re.S
    )
    cards = re.findall(r'<section class="module sentinel-chart".*?</section>', page, re.S)
    return dict(zip(found, cards, strict=True))


def _text(fragment: str) -> str:
    """Return ``fragment``'s text as a person reads it: tags dropped, spaces collapsed."""
    blocks = re.sub(r"</?(?:dt|dd|p|div|h3|code|figcaption|td)\b[^>]*>", " ", fragment)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", blocks)).split())


def _significant(number: str) -> int:
    mantissa = number.split("e")[0].replace(".", "").lstrip("0")
    return len(mantissa)


def test_every_kind_s_card_has_the_same_parts_and_says_what_it_shows(
    staff_client: Client,
) -> None:
    cards = _cards(_page(staff_client, factories.every_kind_analysis()))

    assert list(cards) == ["p99-latency", "p99-vs-before", "latency-vs-old", "errors-vs-old"]
    kinds = {name: re.search(r'data-kind="([^"]+)"', card) for name, card in cards.items()}
    assert {name: match.group(1) for name, match in kinds.items() if match} == {
        "p99-latency": "threshold",
        "p99-vs-before": "baseline",
        "latency-vs-old": "compare",
        "errors-vs-old": "sequential",
    }
    for name, card in cards.items():
        # How it is judged, in words next to its name.
        assert re.search(r'<span class="sentinel-kind">[a-z]', card), name
        # What it reads: no empty box where a query would be.
        reads = re.findall(r'<code class="sentinel-query">(.*?)</code>', card, re.S)
        assert reads and all(code.strip() for code in reads), (name, reads)
        assert "<dt>Fails when</dt>" in card, name
        assert re.search(r'<p class="metric-sentence[^"]*">\S', card), name
        # A caption over each graph, saying what it draws.
        graphs = card.count("<svg")
        captions = re.findall(r"<figcaption>(.*?)</figcaption>", card, re.S)
        assert graphs == len(captions) >= 1 and all(c.strip() for c in captions), name
    sequential = cards["errors-vs-old"]
    # Its evidence, both sides' rates, and the ratio's bounds as a band.
    assert len(re.findall(r'<figure class="sentinel-graph', sequential)) == 3
    assert '<figure class="sentinel-graph sentinel-band">' in sequential
    assert 'class="chart-band"' in sequential and 'class="chart-band-margin"' in sequential
    assert "The value at each evaluation, with the baseline" in cards["p99-vs-before"]


def test_the_sequential_card_shows_its_selectors_its_rule_and_its_sentence(
    staff_client: Client,
) -> None:
    card = _cards(_page(staff_client, factories.every_kind_analysis()))["errors-vs-old"]
    spec = factories.SEQUENTIAL["sequential"]

    text = _text(card)
    assert f"Bad events {spec['bad']}" in text
    assert f"All events {spec['total']}" in text
    assert (
        "Fails when new pods vs old by pod_template_hash: fails when the evidence that the new "
        "pods' share of bad events is over 1.1 \u00d7 the old pods' reaches 20; a Pass needs "
        "100 events on the new pods"
    ) in text
    sentence = re.search(r'<p class="metric-sentence">(.*?)</p>', card, re.S)
    assert sentence is not None and _text(sentence.group(1)) == factories.SEQUENTIAL_SENTENCE
    # The badge: the last evidence out of the evidence needed, rounded.
    assert f"Pass: evidence {readable(factories.RAW_EVIDENCE)} of 20" in text

    histogram = _cards(_page(staff_client, factories.histogram_analysis()))["slow-vs-old"]
    shown = _text(histogram)
    assert f"Histogram {factories.SLOW['sequential']['histogram']}" in shown
    assert "share of requests slower than 0.25 is over 1.1 \u00d7 the old pods'" in shown
    assert "<dt>Bad events</dt>" not in histogram


def test_graph_labels_are_rounded_as_the_tables_are(staff_client: Client) -> None:
    page = _page(staff_client, factories.every_kind_analysis())
    drawn = re.findall(
        r'<svg xmlns="http://www.w3.org/2000/svg" class="metric-chart.*?</svg>', page, re.S
    )
    svgs = [ET.fromstring(svg) for svg in drawn]
    # Three graphs of the sequential metric, one of each other metric.
    assert len(svgs) == 6

    labels = [text.text or "" for svg in svgs for text in svg.iter(f"{SVG}text")]
    described = [desc.text or "" for svg in svgs for desc in svg.iter(f"{SVG}desc")]
    for words in labels + described:
        for number in NUMBER.findall(words):
            assert _significant(number) <= 6, (number, words)
    assert f"baseline {readable(factories.RAW_BASELINE)}" in labels
    assert "baseline 0.0914461" in labels
    new_rate = factories.NEW_BAD / factories.NEW_TOTAL * 100
    assert f"new pods' bad events {readable(new_rate)} %" in labels
    assert repr(factories.RAW_BASELINE) not in " ".join(labels + described)
    assert repr(new_rate) not in " ".join(labels + described)
    # The band's: its margin, and the bounds in its words, six digits as well.
    assert "margin 1.1" in labels
    last_upper = 1.009 * (1 + 3.0 / math.sqrt(15))
    assert f"{readable(1.009 / (1 + 3.0 / math.sqrt(15)))}\u2013{readable(last_upper)}" in (
        " ".join(described)
    )
    assert repr(last_upper) not in " ".join(labels + described)
    # The exact values stay on hover and in data attributes, as in the tables' title.
    (baseline,) = [g for svg in svgs for g in svg.iter(f"{SVG}g") if g.get("data-baseline")]
    assert baseline.get("data-baseline") == repr(factories.RAW_BASELINE)


def test_two_graphs_of_one_card_are_drawn_at_the_same_scale(staff_client: Client) -> None:
    card = _cards(_page(staff_client, factories.every_kind_analysis()))["errors-vs-old"]
    boxes = re.findall(r'<svg [^>]*viewBox="0 0 (\d+) (\d+)"', card)
    # Shown at the card's width, the same viewBox width means the same text size in both.
    assert len(boxes) == 3 and len({width for width, _ in boxes}) == 1, boxes
    sizes = set(re.findall(r'font-size="(\d+)"', card))
    assert sizes == {"11"}, sizes


def test_the_history_says_what_each_kind_s_value_is(staff_client: Client) -> None:
    page = _page(staff_client, factories.every_kind_analysis())
    history = re.search(r'<section[^>]*id="history".*?</section>', page, re.S)
    assert history is not None
    rows = re.findall(r'<td class="sentinel-values">(.*?)</td>', history.group(0), re.S)
    # One cell per metric, each opening with its span.
    opening = '<span class="sentinel-value verdict-'
    newest = [_text(opening + cell) for cell in rows[0].split(opening)[1:]]
    evidence = readable(factories.RAW_EVIDENCE)
    assert newest == [
        "p99-latency 0.41 max 0.25 (fail)",
        f"p99-vs-before {readable(0.41 * 0.4)} baseline 0.0914461 (fail)",
        "latency-vs-old new pods' median 0.08 vs old 0.05 (fail)",
        f"errors-vs-old evidence {evidence} of 20 needed",
    ]
