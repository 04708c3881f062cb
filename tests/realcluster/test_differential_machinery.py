"""The differential test's own machinery, without servers: what it masks and what it reports.

A normalizer that masked too much, or a comparison that missed a difference, would make the
differential test pass for the wrong reason; these pin both on small answers.
"""

from __future__ import annotations

from tests.realcluster.differential import allowlist
from tests.realcluster.differential.compare import ABSENT, Difference, compare_runs
from tests.realcluster.differential.normalize import Normalizer, parse_table, sort_bullets

UID = "0c5b7a0e-7c1e-4b7e-9f55-2f4d2c7f0a11"


def test_server_made_fields_are_masked_only_when_they_have_their_shape() -> None:
    answer = {
        "metadata": {
            "uid": UID,
            "resourceVersion": "4242",
            "creationTimestamp": "2026-12-01T10:00:00Z",
            "managedFields": [{"manager": "kubectl"}],
        },
        "spec": {"renewTime": "2026-12-01T10:00:00.123456Z"},
        "status": {"uid": "not-a-uid", "resourceVersion": "abc"},
    }

    masked = Normalizer().json(answer)

    assert masked == {
        "metadata": {"uid": "<uid>", "resourceVersion": "<rv>", "creationTimestamp": "<time>"},
        # Times the client wrote are compared, and wrong shapes stay visible.
        "spec": {"renewTime": "2026-12-01T10:00:00.123456Z"},
        "status": {"uid": "not-a-uid", "resourceVersion": "abc"},
    }


def test_generated_names_are_masked_in_later_text_too() -> None:
    normalizer = Normalizer()
    created = normalizer.json({"metadata": {"generateName": "guard.", "name": "guard.x7k2p"}})

    assert created["metadata"]["name"] == "guard.<generated>"
    assert normalizer.text("event/guard.x7k2p patched") == "event/guard.<generated> patched"


def test_causes_are_compared_as_a_set() -> None:
    causes = [
        {"field": "spec.b", "message": "Invalid value: 2"},
        {"field": "spec.a", "message": "Invalid value: 1"},
    ]
    status = {
        "kind": "Status",
        "message": 'X "x" is invalid: [spec.b: Invalid value: 2, spec.a: Invalid value: 1]',
        "details": {"causes": causes},
    }

    masked = Normalizer().json(status)

    assert [c["field"] for c in masked["details"]["causes"]] == ["spec.a", "spec.b"]
    assert masked["message"] == (
        'X "x" is invalid: [spec.a: Invalid value: 1, spec.b: Invalid value: 2]'
    )
    assert sort_bullets(["The X is invalid:", "* b", "* a", "done"]) == [
        "The X is invalid:", "* a", "* b", "done",
    ]  # fmt: skip


def test_kubectl_tables_are_split_into_cells_with_ages_masked() -> None:
    text = (
        "NAME    TARGET     VERDICT   AGE\n"
        "guard   checkout   <none>    5s\n"
        "\n"
        "LAST SEEN   TYPE      OBJECT\n"
        "35h         Warning   rolloutanalysis/guard\n"
    )

    assert parse_table(text) == [
        ["NAME", "TARGET", "VERDICT", "AGE"],
        ["guard", "checkout", "<none>", "<age>"],
        ["LAST SEEN", "TYPE", "OBJECT"],
        ["35h", "Warning", "rolloutanalysis/guard"],
    ]


def test_every_differing_leaf_is_reported() -> None:
    real = {"op": {"status": 422, "body": {"items": [1, 2], "kind": "Status"}}}
    dev = {"op": {"status": 200, "body": {"items": [1], "kind": "Status", "extra": True}}}

    found = compare_runs(real, dev)

    assert found == [
        Difference("op", ".body.extra", ABSENT, True),
        Difference("op", ".body.items[1]", 2, ABSENT),
        Difference("op", ".status", 422, 200),
    ]


def test_an_allow_list_entry_matches_by_operation_and_whole_path() -> None:
    [entry] = [e for e in allowlist.ALLOWED if e.ops.startswith("version:")]

    assert entry.matches(Difference(entry.ops, ".server.gitVersion", "a", "b"))
    assert not entry.matches(Difference(entry.ops, ".server.gitVersionX", "a", "b"))
    assert not entry.matches(Difference("another op", ".server.gitVersion", "a", "b"))
