"""RFC 7386 merge patch and RFC 6902 JSON patch in devcluster.patch (the RFC appendices and the
API server's error answers)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from devcluster.patch import PatchError, json_merge_patch, json_patch

# RFC 7386 Appendix A, every row.
RFC7386_EXAMPLES: list[tuple[Any, Any, Any]] = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(("target", "patch", "expected"), RFC7386_EXAMPLES)
def test_merge_patch_rfc7386_appendix(target: Any, patch: Any, expected: Any) -> None:
    assert json_merge_patch(target, patch) == expected


def test_merge_patch_leaves_its_arguments_alone() -> None:
    target = {"metadata": {"labels": {"app": "web", "tier": "x"}}}
    patch = {"metadata": {"labels": {"tier": None, "team": "a"}}}
    snapshot = copy.deepcopy((target, patch))
    result = json_merge_patch(target, patch)
    assert result == {"metadata": {"labels": {"app": "web", "team": "a"}}}
    assert (target, patch) == snapshot
    result["metadata"]["labels"]["app"] = "changed"
    assert target["metadata"]["labels"]["app"] == "web"


def test_merge_patch_kubectl_label_and_unlabel_bodies() -> None:
    # Bodies captured from `kubectl label deployment/web team=a` and `... team-` (-v=9).
    live = {"metadata": {"name": "web", "labels": {"app": "web"}}, "spec": {"replicas": 2}}
    labelled = json_merge_patch(live, {"metadata": {"labels": {"team": "a"}}})
    assert labelled["metadata"]["labels"] == {"app": "web", "team": "a"}
    unlabelled = json_merge_patch(labelled, {"metadata": {"labels": {"team": None}}})
    assert unlabelled["metadata"]["labels"] == {"app": "web"}
    assert unlabelled["spec"] == {"replicas": 2}


# RFC 6902 Appendix A (A.13 is about duplicate JSON members, which never reach the decoder).
RFC6902_EXAMPLES: list[tuple[Any, list[dict[str, Any]], Any]] = [
    ({"foo": "bar"}, [{"op": "add", "path": "/baz", "value": "qux"}], {"baz": "qux", "foo": "bar"}),
    (
        {"foo": ["bar", "baz"]},
        [{"op": "add", "path": "/foo/1", "value": "qux"}],
        {"foo": ["bar", "qux", "baz"]},
    ),
    ({"baz": "qux", "foo": "bar"}, [{"op": "remove", "path": "/baz"}], {"foo": "bar"}),
    ({"foo": ["bar", "qux", "baz"]}, [{"op": "remove", "path": "/foo/1"}], {"foo": ["bar", "baz"]}),
    (
        {"baz": "qux", "foo": "bar"},
        [{"op": "replace", "path": "/baz", "value": "boo"}],
        {"baz": "boo", "foo": "bar"},
    ),
    (
        {"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
        [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}],
        {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}},
    ),
    (
        {"foo": ["all", "grass", "cows", "eat"]},
        [{"op": "move", "from": "/foo/1", "path": "/foo/3"}],
        {"foo": ["all", "cows", "eat", "grass"]},
    ),
    (
        {"baz": "qux", "foo": ["a", 2, "c"]},
        [
            {"op": "test", "path": "/baz", "value": "qux"},
            {"op": "test", "path": "/foo/1", "value": 2},
        ],
        {"baz": "qux", "foo": ["a", 2, "c"]},
    ),
    (
        {"foo": "bar"},
        [{"op": "add", "path": "/child", "value": {"grandchild": {}}}],
        {"foo": "bar", "child": {"grandchild": {}}},
    ),
    (
        {"foo": "bar"},
        [{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}],
        {"foo": "bar", "baz": "qux"},
    ),
    ({"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": 10}], {"/": 9, "~1": 10}),
    (
        {"foo": ["bar"]},
        [{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}],
        {"foo": ["bar", ["abc", "def"]]},
    ),
]


@pytest.mark.parametrize(("target", "operations", "expected"), RFC6902_EXAMPLES)
def test_json_patch_rfc6902_appendix(
    target: Any, operations: list[dict[str, Any]], expected: Any
) -> None:
    assert json_patch(target, operations) == expected


@pytest.mark.parametrize(
    ("target", "operations", "cause"),
    [
        # A.9 testing a value: error
        ({"baz": "qux"}, [{"op": "test", "path": "/baz", "value": "bar"}], "testing value /baz"),
        # A.12 adding to a nonexistent target
        (
            {"foo": "bar"},
            [{"op": "add", "path": "/baz/bat", "value": "qux"}],
            'add operation does not apply: doc is missing path: "/baz/bat": missing value',
        ),
        # A.15 comparing strings and numbers
        ({"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": "10"}], "testing value"),
    ],
)
def test_json_patch_rfc6902_appendix_failures(
    target: Any, operations: list[dict[str, Any]], cause: str
) -> None:
    with pytest.raises(PatchError) as caught:
        json_patch(target, operations)
    assert caught.value.status == 422
    assert caught.value.reason == "Invalid"
    assert caught.value.message == "the server rejected our request due to an error in our request"
    assert cause in caught.value.cause


def test_json_patch_is_all_or_nothing() -> None:
    target = {"spec": {"replicas": 1}}
    with pytest.raises(PatchError):
        json_patch(
            target,
            [
                {"op": "replace", "path": "/spec/replicas", "value": 5},
                {"op": "test", "path": "/spec/replicas", "value": 1},
            ],
        )
    assert target == {"spec": {"replicas": 1}}


def test_json_patch_test_guards_a_replace_like_an_optimistic_lock() -> None:
    live = {"metadata": {"resourceVersion": "7"}, "spec": {"paused": False}}
    ops = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": "7"},
        {"op": "replace", "path": "/spec/paused", "value": True},
    ]
    assert json_patch(live, ops)["spec"]["paused"] is True
    stale = {"metadata": {"resourceVersion": "8"}, "spec": {"paused": False}}
    with pytest.raises(PatchError) as caught:
        json_patch(stale, ops)
    assert caught.value.cause == "testing value /metadata/resourceVersion failed: test failed"


@pytest.mark.parametrize(
    ("operations", "expected"),
    [
        ([{"op": "add", "path": "/f/-1", "value": "z"}], ["a", "b", "z"]),
        ([{"op": "add", "path": "/f/0", "value": "z"}], ["z", "a", "b"]),
        ([{"op": "remove", "path": "/f/-1"}], ["a"]),
        ([{"op": "replace", "path": "/f/-2", "value": "z"}], ["z", "b"]),
        ([{"op": "copy", "from": "/f/0", "path": "/f/-"}], ["a", "b", "a"]),
    ],
)
def test_json_patch_array_indices_including_negative(
    operations: list[dict[str, Any]], expected: list[str]
) -> None:
    assert json_patch({"f": ["a", "b"]}, operations) == {"f": expected}


@pytest.mark.parametrize(
    ("operations", "cause"),
    [
        (
            [{"op": "add", "path": "/f/5", "value": "z"}],
            "error in add for path: '/f/5': Unable to access invalid index: 5: "
            "invalid index referenced",
        ),
        (
            [{"op": "remove", "path": "/nope"}],
            "error in remove for path: '/nope': Unable to remove nonexistent key: nope: "
            "missing value",
        ),
        (
            [{"op": "replace", "path": "/f/9", "value": 1}],
            "replace operation does not apply: doc is missing key: /f/9: missing value",
        ),
        (
            [{"op": "replace", "path": "/x/y", "value": 1}],
            "replace operation does not apply: doc is missing path: /x/y: missing value",
        ),
        ([{"op": "bogus", "path": "/f"}], "Unexpected kind: bogus"),
        ([{"op": "add", "value": 1}], "add operation failed to decode path: missing value"),
        (
            [{"op": "move", "from": "/x/y", "path": "/z"}],
            "move operation does not apply: doc is missing from path: /x/y: missing value",
        ),
    ],
)
def test_json_patch_failures_carry_the_library_message(
    operations: list[dict[str, Any]], cause: str
) -> None:
    with pytest.raises(PatchError) as caught:
        json_patch({"f": ["a", "b"]}, operations)
    assert caught.value.status == 422
    assert caught.value.cause == cause
    body = caught.value.status_body()
    assert body["code"] == 422
    assert body["reason"] == "Invalid"
    assert body["details"] == {"causes": [{"message": cause}]}


def test_json_patch_replace_creates_a_missing_member_like_evanphx_v4() -> None:
    assert json_patch({"a": 1}, [{"op": "replace", "path": "/b", "value": 2}]) == {"a": 1, "b": 2}


def test_json_patch_pointer_escapes() -> None:
    live = {"metadata": {"annotations": {"example.com/a~b": "1"}}}
    patched = json_patch(
        live,
        [
            {"op": "remove", "path": "/metadata/annotations/example.com~1a~0b"},
            {"op": "add", "path": "/metadata/annotations/x~1y", "value": "2"},
        ],
    )
    assert patched == {"metadata": {"annotations": {"x/y": "2"}}}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"op": "add"}, "json: cannot unmarshal object into Go value of type jsonpatch.Patch"),
        ("x", "json: cannot unmarshal string into Go value of type jsonpatch.Patch"),
        (["x"], "json: cannot unmarshal string into Go value of type jsonpatch.Operation"),
    ],
)
def test_json_patch_body_that_is_not_a_list_of_objects_is_a_bad_request(
    body: Any, message: str
) -> None:
    with pytest.raises(PatchError) as caught:
        json_patch({"a": 1}, body)
    assert caught.value.status == 400
    assert caught.value.reason == "BadRequest"
    assert caught.value.message == message


def test_json_patch_test_treats_numbers_by_value_but_not_booleans_as_numbers() -> None:
    live = {"n": 1, "b": True}
    assert json_patch(live, [{"op": "test", "path": "/n", "value": 1.0}]) == live
    with pytest.raises(PatchError):
        json_patch(live, [{"op": "test", "path": "/b", "value": 1}])
    with pytest.raises(PatchError):
        json_patch(live, [{"op": "test", "path": "/n", "value": True}])
