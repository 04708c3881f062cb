"""Property pass over ``parse_spec``: whatever the input, an ``AnalysisSpec`` or an
``InvalidSpecError`` (with field errors under ``spec``), never any other exception.

Inputs are arbitrary JSON values and spec-shaped objects with arbitrary leaves; a spec that
parses round-trips through ``to_dict``.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sentinel_core.spec import AnalysisSpec, InvalidSpecError, parse_spec

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)
# Leaves that come near the rules: names, durations, numbers written in odd ways.
NEAR = st.one_of(
    JSON,
    st.sampled_from(["", "m", "P99", "a" * 64, "a" * 63, "30s", "1m30s", "4s", "1.5h", "-1s"]),
    st.sampled_from([0, 1, -1, 2**31, 2**63, 1.5, 1e308, "3", True]),
    st.text(alphabet="abc-.0123456789smh", max_size=12),
)
METRIC = st.fixed_dictionaries(
    {}, optional={"name": NEAR, "query": NEAR, "maxValue": NEAR, "extra": NEAR}
)
SPEC = st.fixed_dictionaries(
    {},
    optional={
        "target": st.one_of(NEAR, st.fixed_dictionaries({}, optional={"kind": NEAR, "name": NEAR})),
        "metrics": st.one_of(NEAR, st.lists(METRIC, max_size=22)),
        "interval": NEAR,
        "failureLimit": NEAR,
        "dryRun": NEAR,
    },
)


def _check(raw: Any, strict: bool) -> None:
    try:
        parsed = parse_spec(raw, strict=strict)
    except InvalidSpecError as exc:
        assert exc.errors
        assert all(error.field.startswith("spec") and error.message for error in exc.errors)
        # A message never quotes a huge value back.
        assert all(len(error.message) < 400 for error in exc.errors), exc.errors
        return
    assert isinstance(parsed, AnalysisSpec)
    assert 1 <= len(parsed.metrics) <= 20
    assert parse_spec(parsed.to_dict(), strict=True) == parsed


@settings(max_examples=400, deadline=None)
@given(raw=JSON, strict=st.booleans())
def test_any_json_value(raw: Any, strict: bool) -> None:
    _check(raw, strict)


@settings(max_examples=600, deadline=None)
@given(raw=SPEC, strict=st.booleans())
def test_spec_shaped_objects(raw: dict[str, Any], strict: bool) -> None:
    _check(raw, strict)


def test_huge_wrong_kind_is_not_quoted_whole() -> None:
    raw = {"target": {"kind": ["x"] * 100_000, "name": "a"}, "metrics": []}
    try:
        parse_spec(raw)
    except InvalidSpecError as exc:
        kind = exc.by_field()["spec.target.kind"][0]
        assert kind.endswith("got a list") and len(kind) < 100
    else:
        raise AssertionError("a list is no kind")
