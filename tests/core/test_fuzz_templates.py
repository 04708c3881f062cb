"""Property pass over template resolution (docs/templates.md#placeholders).

Whatever an argument holds, the resolved query has the template's shape: the value inserted in
a PromQL string literal reads back, through an independent reading of the literal (Go's escapes,
which PromQL uses, are Python's for these characters), as exactly the value, and the text
outside literals is the template's own. Outside a literal a value is either a plain token or
``InvalidTemplate``. Whatever the spec and templates hold, ``resolve`` returns or raises
``TemplateError``, never any other exception.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sentinel_core.conditions import Reason
from sentinel_core.templates import Template, TemplateError, TemplateRef, resolve

_REF = TemplateRef("t", cluster_scope=True)
# A PromQL double- or single-quoted literal: no raw quote, backslash or newline inside but escaped.
_LITERAL = {'"': r'"((?:[^"\\\n]|\\.)*)"', "'": r"'((?:[^'\\\n]|\\.)*)'"}
VALUES = st.one_of(
    st.text(max_size=40),
    st.text(alphabet="\"'`\\{}#\n\r\t ()orvectn1=~,", max_size=30),
    st.sampled_from(['"} or vector(1) #', "\\", '\\"', "'", "`", "{{ args.x }}", ""]),
)


def _resolved(query: str, value: str) -> str:
    template = Template(
        _REF,
        1,
        {"args": [{"name": "x"}], "metrics": [{"name": "m", "query": query, "maxValue": 1}]},
    )
    raw = {
        "target": {"name": "checkout"},
        "templates": [{"name": "t", "clusterScope": True}],
        "args": [{"name": "x", "value": value}],
    }
    result = resolve(raw, "ns", {_REF: template}).spec["metrics"][0]["query"]
    assert isinstance(result, str)
    return result


@settings(max_examples=200)
@given(value=VALUES, quote=st.sampled_from(['"', "'"]), twice=st.booleans())
def test_a_value_in_a_string_literal_reads_back_as_itself(
    value: str, quote: str, twice: bool
) -> None:
    selector = f"{{a={quote}{{{{ args.x }}}}{quote}, b={quote}pre-{{{{ args.x }}}}{quote}}}"
    query = f"sum(rate(http_requests_total{selector}[5m])) > 0"
    if twice:
        query = f"{query} and on() up{{c={quote}{{{{ args.x }}}}{quote}}}"
    resolved = _resolved(query, value)
    literal = _LITERAL[quote]
    pattern = rf"sum\(rate\(http_requests_total\{{a={literal}, b={literal}\}}\[5m\]\)\) > 0" + (
        rf" and on\(\) up\{{c={literal}\}}" if twice else ""
    )
    match = re.fullmatch(pattern, resolved, flags=re.DOTALL)
    assert match, resolved
    read = [ast.literal_eval(quote + body + quote) for body in match.groups()]
    assert read[0] == value and read[1] == "pre-" + value
    assert all(r == value for r in read[2:])


@settings(max_examples=150)
@given(value=VALUES)
def test_a_value_outside_a_literal_is_a_plain_token_or_invalid_template(value: str) -> None:
    query = "rate(http_requests_total[{{ args.x }}])"
    try:
        resolved = _resolved(query, value)
    except TemplateError as exc:
        assert exc.reason == Reason.INVALID_TEMPLATE
        assert "stands outside a string literal" in exc.message
        assert not re.fullmatch(r"[A-Za-z0-9_:.]+", value)
    else:
        assert re.fullmatch(r"[A-Za-z0-9_:.]+", value)
        assert resolved == f"rate(http_requests_total[{value}])"


@settings(max_examples=100)
@given(value=VALUES)
def test_a_value_in_a_raw_string_is_verbatim_or_refused_for_its_backtick(value: str) -> None:
    try:
        resolved = _resolved("up{a=`{{ args.x }}`}", value)
    except TemplateError as exc:
        assert exc.reason == Reason.INVALID_TEMPLATE and "`" in value
    else:
        assert resolved == f"up{{a=`{value}`}}"


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)
NEAR = st.one_of(
    JSON,
    st.sampled_from(["{{ args.x }}", "{{ namespace }}", "{{ nope }}", "{{", "up", "5m", "t"]),
)
METRIC = st.fixed_dictionaries(
    {}, optional={"name": NEAR, "query": NEAR, "maxValue": NEAR, "sequential": JSON}
)
TEMPLATE_SPEC = st.fixed_dictionaries(
    {},
    optional={
        "args": st.one_of(
            NEAR, st.lists(st.fixed_dictionaries({}, optional={"name": NEAR, "default": NEAR}))
        ),
        "metrics": st.one_of(NEAR, st.lists(METRIC, max_size=4)),
        "interval": NEAR,
        "failureLimit": NEAR,
    },
)
ANALYSIS = st.fixed_dictionaries(
    {},
    optional={
        "target": NEAR,
        "templates": st.one_of(
            NEAR,
            st.lists(st.fixed_dictionaries({}, optional={"name": NEAR, "clusterScope": NEAR})),
        ),
        "args": st.one_of(
            NEAR, st.lists(st.fixed_dictionaries({}, optional={"name": NEAR, "value": NEAR}))
        ),
        "metrics": st.one_of(NEAR, st.lists(METRIC, max_size=3)),
        "interval": NEAR,
    },
)


@settings(max_examples=300)
@given(raw=st.one_of(JSON, ANALYSIS), spec=st.one_of(JSON, TEMPLATE_SPEC), scope=st.booleans())
def test_any_input_resolves_or_is_a_template_error(raw: Any, spec: Any, scope: bool) -> None:
    ref = TemplateRef("t", cluster_scope=scope)
    try:
        resolved = resolve(raw, "ns", {ref: Template(ref, 1, spec)})
    except TemplateError as exc:
        assert exc.reason in {
            Reason.TEMPLATE_NOT_FOUND,
            Reason.MISSING_ARGUMENT,
            Reason.INVALID_TEMPLATE,
            Reason.INVALID_SPEC,
        }
        assert exc.message
    else:
        assert "templates" not in resolved.spec and "args" not in resolved.spec
