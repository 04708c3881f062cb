"""Label and field selectors in devcluster.selectors: matching and the API server's messages."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from devcluster.selectors import (
    Requirement,
    SelectorError,
    field_selector,
    label_selector,
    parse_labels,
)

WEB = {"app": "web", "tier": "frontend", "app.kubernetes.io/name": "web", "rank": "3"}
DB = {"app": "db", "tier": "backend"}
BARE: dict[str, str] = {}


@pytest.mark.parametrize(
    ("expression", "web", "db", "bare"),
    [
        ("", True, True, True),
        ("app=web", True, False, False),
        ("app==web", True, False, False),
        ("app!=web", False, True, True),
        ("app in (web,db)", True, True, False),
        ("app notin (web)", False, True, True),
        ("tier", True, True, False),
        ("!tier", False, False, True),
        ("app=web,tier=frontend", True, False, False),
        ("app=web,tier=backend", False, False, False),
        ("  app = web ,  tier in ( frontend , x )  ", True, False, False),
        ("app.kubernetes.io/name=web", True, False, False),
        ("rank>2", True, False, False),
        ("rank<3", False, False, False),
        ("tier,!missing,app notin (db)", True, False, False),
        ("app in (web,)", True, False, False),
        ("missing=", False, False, False),
    ],
)
def test_label_selector_matching(expression: str, web: bool, db: bool, bare: bool) -> None:
    matches = label_selector(expression)
    assert (matches(WEB), matches(DB), matches(BARE)) == (web, db, bare)


def test_label_selector_parses_into_requirements() -> None:
    assert parse_labels("a=b, c in (y,x), !d, e notin (z), f, g!=h") == [
        Requirement("a", "=", ("b",)),
        Requirement("c", "in", ("x", "y")),
        Requirement("d", "!"),
        Requirement("e", "notin", ("z",)),
        Requirement("f", "exists"),
        Requirement("g", "!=", ("h",)),
    ]


def test_keywords_are_plain_values_after_an_operator() -> None:
    assert label_selector("mode=in")({"mode": "in"})
    assert label_selector("mode in (notin)")({"mode": "notin"})


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("a in x", "unable to parse requirement: found 'x' expected: '('"),
        ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
        ("=a", "found '=', expected: !, identifier, or 'end of string'"),
        ("a,", "found '', expected: identifier after ','"),
        ("a==b==c", "found '==', expected: ',' or 'end of string'"),
        ("!a=b", "found '=', expected: ',' or 'end of string'"),
        ("a in (x", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("a in (x y)", "unable to parse requirement: found 'y', expected: ',' or ')'"),
        (
            "a>b",
            "unable to parse requirement: values[0]: Invalid value: \"b\": for 'Gt', 'Lt' "
            "operators, the value must be an integer",
        ),
    ],
)
def test_label_selector_syntax_errors(expression: str, message: str) -> None:
    with pytest.raises(SelectorError) as caught:
        label_selector(expression)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("expression", "fragment"),
    [
        ("x/y/z=1", 'key: Invalid value: "x/y/z": prefix part'),
        ("-a=1", 'key: Invalid value: "-a": name part must consist of alphanumeric'),
        ("a=-x", 'values[0]: Invalid value: "-x": a valid label must be an empty string'),
        ("a=" + "v" * 64, "must be no more than 63 bytes"),
    ],
)
def test_label_selector_validates_keys_and_values(expression: str, fragment: str) -> None:
    with pytest.raises(SelectorError) as caught:
        label_selector(expression)
    assert str(caught.value).startswith("unable to parse requirement: ")
    assert fragment in str(caught.value)


def test_label_selector_treats_missing_labels_as_empty_map() -> None:
    assert label_selector("!a")({})
    assert not label_selector("a")({})


def _pod_fields(obj: Mapping[str, Any]) -> Mapping[str, str]:
    metadata = obj.get("metadata") or {}
    return {
        "metadata.name": metadata.get("name", ""),
        "metadata.namespace": metadata.get("namespace", ""),
        "status.phase": (obj.get("status") or {}).get("phase", ""),
    }


RUNNING = {"metadata": {"name": "web-1", "namespace": "prod"}, "status": {"phase": "Running"}}
PENDING = {"metadata": {"name": "web-2", "namespace": "dev"}, "status": {"phase": "Pending"}}


@pytest.mark.parametrize(
    ("expression", "running", "pending"),
    [
        ("", True, True),
        ("metadata.name=web-1", True, False),
        ("metadata.name==web-2", False, True),
        ("metadata.name!=web-1", False, True),
        ("metadata.namespace=prod,status.phase=Running", True, False),
        ("metadata.namespace=prod,status.phase!=Running", False, False),
        ("status.phase=", False, False),
    ],
)
def test_field_selector_matching(expression: str, running: bool, pending: bool) -> None:
    matches = field_selector(expression, _pod_fields)
    assert (matches(RUNNING), matches(PENDING)) == (running, pending)


def test_field_selector_rejects_unsupported_fields() -> None:
    with pytest.raises(SelectorError) as caught:
        field_selector("metadata.name=a,spec.foo=b", _pod_fields)
    assert str(caught.value) == "field label not supported: spec.foo"


def test_field_selector_supported_fields_can_be_given() -> None:
    matches = field_selector("spec.nodeName=n1", lambda o: o, supported=["spec.nodeName"])
    assert matches({"spec.nodeName": "n1"})
    with pytest.raises(SelectorError):
        field_selector("metadata.name=x", lambda o: o, supported=["spec.nodeName"])


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("metadata.name", "invalid selector: 'metadata.name'; can't understand 'metadata.name'"),
        (
            "metadata.name=a,oops",
            "invalid selector: 'metadata.name=a,oops'; can't understand 'oops'",
        ),
        ("metadata.name=a\\b", "invalid field selector: invalid escape sequence: \\b"),
    ],
)
def test_field_selector_syntax_errors(expression: str, message: str) -> None:
    with pytest.raises(SelectorError) as caught:
        field_selector(expression, _pod_fields)
    assert str(caught.value) == message


def test_field_selector_escaped_values() -> None:
    obj = {"metadata": {"name": "a,b=c"}}
    assert field_selector("metadata.name=a\\,b\\=c", _pod_fields)(obj)
