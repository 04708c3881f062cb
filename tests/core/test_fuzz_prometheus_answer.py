"""Property pass over the Prometheus answer parser (``prometheus.parse_answer``).

Whatever the status, content type and bytes, the parser returns a ``Measurement``: a value, no
data, or a typed error (``UNAVAILABLE`` / ``INVALID_QUERY``), never an exception. Also: a body
nested thousands deep (which makes ``json.loads`` raise ``RecursionError``) is an unusable body,
and well-formed vectors give their largest value.
"""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sentinel_core.measurement import Measurement, MeasurementError
from sentinel_operator.prometheus import parse_answer

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=25,
)
STATUS = st.sampled_from([200, 200, 200, 400, 422, 500, 502, 503])
CONTENT_TYPE = st.sampled_from(["application/json", "text/html", "", "text/plain"])
# Keys and values Prometheus uses, so that arbitrary shapes reach the deeper branches.
ANSWER = st.fixed_dictionaries(
    {"status": st.sampled_from(["success", "error", "other"]) | JSON},
    optional={
        "data": st.fixed_dictionaries(
            {},
            optional={
                "resultType": st.sampled_from(["vector", "scalar", "matrix", "string"]) | JSON,
                "result": st.lists(
                    st.fixed_dictionaries(
                        {}, optional={"metric": JSON, "value": JSON, "histogram": JSON}
                    )
                    | JSON,
                    max_size=4,
                )
                | JSON,
            },
        )
        | JSON,
        "errorType": st.sampled_from(["bad_data", "execution", "timeout"]) | JSON,
        "error": JSON,
    },
)


def _check(result: Any) -> None:
    assert isinstance(result, Measurement)
    assert result.metric == "m"
    if result.error is not None:
        assert result.error in (MeasurementError.UNAVAILABLE, MeasurementError.INVALID_QUERY)
        assert result.value is None and result.message
    elif result.value is not None:
        assert not math.isnan(result.value) and result.text is not None


@settings(max_examples=500, deadline=None)
@given(body=st.binary(max_size=300), status=STATUS, content_type=CONTENT_TYPE)
def test_any_bytes(body: bytes, status: int, content_type: str) -> None:
    _check(parse_answer("m", status=status, reason="", content_type=content_type, body=body))


@settings(max_examples=800, deadline=None)
@given(answer=ANSWER | JSON, status=STATUS)
def test_any_json(answer: Any, status: int) -> None:
    body = json.dumps(answer).encode()
    _check(
        parse_answer("m", status=status, reason="OK", content_type="application/json", body=body)
    )


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=8))
def test_vector_gives_its_largest_value(values: list[float]) -> None:
    result = [{"metric": {"i": str(i)}, "value": [1, repr(v)]} for i, v in enumerate(values)]
    body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}})
    measured = parse_answer("m", status=200, reason="OK", content_type="", body=body.encode())
    assert measured.error is None and measured.value == max(values)
    assert measured.series == len(values)


def test_deeply_nested_body_is_unavailable_not_recursion_error() -> None:
    for body in (b"[" * 200_000, b'{"a":' * 100_000, b"[" * 100_000 + b"]" * 100_000):
        result = parse_answer("m", status=200, reason="OK", content_type="", body=body)
        assert result.error is MeasurementError.UNAVAILABLE
        assert "invalid JSON" in result.message


def test_nested_error_text_is_not_printed() -> None:
    # Parses (900 deep), but printing it would be useless or fail: only strings are shown.
    nested = "[" * 900 + "]" * 900
    body = f'{{"status":"error","errorType":"bad_data","error":{nested}}}'.encode()
    result = parse_answer("m", status=400, reason="", content_type="", body=body)
    assert result.error is MeasurementError.INVALID_QUERY
    assert result.message == "no error text"
