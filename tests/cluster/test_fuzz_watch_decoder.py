"""Property pass over the watch-stream decoder (``kube.WatchDecoder``, ``kube.decode_event``).

Whatever bytes the API server (or a proxy) sends, cut into whatever chunks, the decoder yields
``WatchEvent``s or raises a ``KubeError`` (``Unavailable``, or the error of an ``ERROR`` event),
never anything else; well-formed streams decode to the same events however they are chunked; a
line nested thousands deep or longer than the cap is ``Unavailable``, without buffering more.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sentinel_cluster import kube

PATH = "/apis/sentinel.example.com/v1alpha1/rolloutanalyses"
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
EVENT_LIKE = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"]) | JSON,
        "object": st.fixed_dictionaries(
            {}, optional={"code": JSON | st.integers(0, 700), "message": JSON, "reason": JSON}
        )
        | JSON,
    },
)
# NaN is valid to Python's json but never equal to itself: the round trip compares without it.
FINITE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
OBJECT = st.dictionaries(st.text(max_size=8), FINITE, max_size=4)
GOOD_EVENT = st.builds(
    lambda kind, obj: {"type": kind, "object": obj},
    st.sampled_from(["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]),
    OBJECT,
)


def _chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(cut, len(data)) for cut in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


def _decode(chunks: list[bytes], max_line: int = kube.MAX_WATCH_LINE) -> list[kube.WatchEvent]:
    decoder = kube.WatchDecoder(PATH, max_line=max_line)
    events: list[kube.WatchEvent] = []
    for chunk in chunks:
        events.extend(decoder.feed(chunk))
    return events + decoder.finish()


def _only_typed_errors(chunks: list[bytes], max_line: int = kube.MAX_WATCH_LINE) -> None:
    try:
        events = _decode(chunks, max_line)
    except kube.KubeError as exc:
        assert str(exc).startswith("watch ")
        return
    assert all(isinstance(event.type, str) and isinstance(event.object, dict) for event in events)


@settings(max_examples=500, deadline=None)
@given(data=st.binary(max_size=400), cuts=st.lists(st.integers(0, 400), max_size=6))
def test_any_bytes(data: bytes, cuts: list[int]) -> None:
    _only_typed_errors(_chunks(data, cuts))


@settings(max_examples=500, deadline=None)
@given(lines=st.lists(EVENT_LIKE | JSON, max_size=5), cuts=st.lists(st.integers(0, 600)))
def test_any_json_lines(lines: list[Any], cuts: list[int]) -> None:
    data = b"\n".join(json.dumps(line).encode() for line in lines)
    _only_typed_errors(_chunks(data, cuts))


@settings(max_examples=300, deadline=None)
@given(events=st.lists(GOOD_EVENT, max_size=6), cuts=st.lists(st.integers(0, 2000)))
def test_well_formed_stream_decodes_the_same_however_chunked(
    events: list[dict[str, Any]], cuts: list[int]
) -> None:
    data = b"".join(json.dumps(event).encode() + b"\n" for event in events)
    decoded = _decode(_chunks(data, cuts))
    assert [(e.type, e.object) for e in decoded] == [(e["type"], e["object"]) for e in events]


def test_error_event_raises_the_servers_error() -> None:
    gone = {"type": "ERROR", "object": {"code": 410, "reason": "Expired", "message": "too old"}}
    with pytest.raises(kube.Gone, match="too old"):
        _decode([json.dumps(gone).encode() + b"\n"])
    odd = {"type": "ERROR", "object": {"code": "x", "message": [[1]]}}
    with pytest.raises(kube.Unavailable, match="HTTP 500"):
        _decode([json.dumps(odd).encode()])


def test_deeply_nested_line_is_unavailable() -> None:
    with pytest.raises(kube.Unavailable, match="invalid JSON"):
        _decode([b"[" * 200_000 + b"\n"])


def test_overlong_line_is_refused_before_it_is_buffered_whole() -> None:
    decoder = kube.WatchDecoder(PATH, max_line=1024)
    decoder.feed(b'{"type":"ADDED","object":{"x":"' + b"a" * 900)
    with pytest.raises(kube.Unavailable, match="longer than 1024 bytes"):
        decoder.feed(b"a" * 200)


def test_non_object_event_is_unavailable() -> None:
    for line in (b"[1, 2]", b'"ADDED"', b'{"type": 1}', b'{"type": "ADDED", "object": [1]}'):
        with pytest.raises(kube.Unavailable, match="not"):
            _decode([line + b"\n"])
